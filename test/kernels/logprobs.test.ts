import { describe, expect, it } from 'vitest';
import { roundF16 } from '../../src/gpu/dtype.ts';
import { logprobs, logprobsBackward } from '../../src/kernels/logprobs.ts';
import { dot, numericGrad } from '../helpers/finite-diff.ts';
import { testGpu } from '../helpers/gpu.ts';
import { randInts, randn, relError } from '../helpers/random.ts';
import { logprobsBackwardRef, logprobsRef } from '../ref/logprobs.ts';

// [rows, vocab, temperature]: fewer columns than threads, odd vocab, Qwen3's full vocabulary.
const CASES: [number, number, number][] = [
  [1, 1, 1],
  [3, 100, 1],
  [5, 1001, 0.7],
  [2, 151_936, 1.3],
];

describe('logprobs', () => {
  for (const dtype of ['f32', 'f16'] as const) {
    for (const [rows, vocab, tau] of CASES) {
      it(`${dtype} rows=${rows} vocab=${vocab} τ=${tau}: forward and backward`, async (ctx) => {
        const gpu = await testGpu();
        if (dtype === 'f16' && !gpu.f16) return ctx.skip();
        const round = dtype === 'f16' ? roundF16 : (a: Float32Array) => a;
        const logits = round(randn(rows * vocab, rows + vocab, 4));
        const targets = randInts(rows, vocab, vocab);
        const dlogp = randn(rows, 5);
        const dent = randn(rows, 6);
        const lT = gpu.upload(logits, [rows, vocab], dtype, 'logits');
        const tT = gpu.upload(targets, [rows], 'u32', 'targets');
        const s = logprobs(gpu, lT, tT, { temperature: tau });
        const ref = logprobsRef(logits, vocab, targets, tau);
        expect(relError(await gpu.readF32(s.logp), ref.logp)).toBeLessThan(1e-5);
        expect(relError(await gpu.readF32(s.lse), ref.lse)).toBeLessThan(1e-5);
        expect(relError(await gpu.readF32(s.entropy), ref.entropy, 1e-3)).toBeLessThan(1e-4);
        const g = logprobsBackward(gpu, lT, tT, s, { dlogp: gpu.upload(dlogp, [rows], 'f32', 'dlogp'), dentropy: gpu.upload(dent, [rows], 'f32', 'dentropy') }, { temperature: tau });
        expect(g).toBe(lT);
        const gref = logprobsBackwardRef(logits, vocab, targets, dlogp, dent, tau);
        expect(relError(await gpu.readF32(g), gref)).toBeLessThan(dtype === 'f16' ? 3e-3 : 1e-4);
      });
    }
  }

  it('chunks of rows share the per-row arrays; dentropy is optional', async () => {
    const gpu = await testGpu();
    const [rows, vocab, chunk] = [7, 333, 3];
    const logits = randn(rows * vocab, 21, 3);
    const targets = randInts(rows, 22, vocab);
    const dlogp = randn(rows, 23);
    const tT = gpu.upload(targets, [rows], 'u32', 'targets');
    const dT = gpu.upload(dlogp, [rows], 'f32', 'dlogp');
    const stats = { logp: gpu.tensor([rows], 'f32', 'logp'), entropy: gpu.tensor([rows], 'f32', 'entropy'), lse: gpu.tensor([rows], 'f32', 'lse') };
    const grads: Float32Array[] = [];
    for (let r0 = 0; r0 < rows; r0 += chunk) {
      const n = Math.min(chunk, rows - r0);
      const c = gpu.upload(logits.subarray(r0 * vocab, (r0 + n) * vocab), [n, vocab], 'f32', 'chunk');
      logprobs(gpu, c, tT, { rowOffset: r0, out: stats });
      logprobsBackward(gpu, c, tT, stats, { dlogp: dT }, { rowOffset: r0 });
      grads.push(await gpu.readF32(c));
    }
    const ref = logprobsRef(logits, vocab, targets);
    expect(relError(await gpu.readF32(stats.logp), ref.logp)).toBeLessThan(1e-5);
    expect(relError(await gpu.readF32(stats.entropy), ref.entropy)).toBeLessThan(1e-4);
    const all = new Float32Array(rows * vocab);
    grads.reduce((off, g) => (all.set(g, off), off + g.length), 0);
    expect(relError(all, logprobsBackwardRef(logits, vocab, targets, dlogp, null))).toBeLessThan(1e-4);
  });

  it('reference backward matches finite differences', () => {
    const [rows, vocab, tau] = [2, 5, 0.8];
    const logits = randn(rows * vocab, 31, 2);
    const targets = Uint32Array.from([3, 0]);
    const dlogp = randn(rows, 32);
    const dent = randn(rows, 33);
    const f = (v: Float64Array) => {
      const r = logprobsRef(v, vocab, targets, tau);
      return dot(r.logp, dlogp) + dot(r.entropy, dent);
    };
    expect(relError(logprobsBackwardRef(logits, vocab, targets, dlogp, dent, tau), numericGrad(f, logits))).toBeLessThan(1e-7);
  });

  it('rejects a chunk that runs past the per-row arrays', async () => {
    const gpu = await testGpu();
    const l = gpu.upload(randn(20, 1), [4, 5], 'f32', 'logits');
    const t = gpu.upload([0, 1, 2], [3], 'u32', 'targets');
    expect(() => logprobs(gpu, l, t)).toThrow(/rows 0..4 of logits exceed targets's 3/);
    expect(() => logprobs(gpu, l, gpu.upload([0, 1, 2, 3], [4], 'u32', 'tg'), { temperature: 0 })).toThrow(/temperature/);
  });
});
