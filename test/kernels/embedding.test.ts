import { describe, expect, it } from 'vitest';
import { roundF16 } from '../../src/gpu/dtype.ts';
import { embedding, embeddingBackward, scatterPlan } from '../../src/kernels/embedding.ts';
import { testGpu } from '../helpers/gpu.ts';
import { randInts, randn, relError } from '../helpers/random.ts';
import { embeddingBackwardRef, embeddingRef } from '../ref/embedding.ts';

// [vocab, hidden, tokens]: odd sizes, repeated ids (tokens > vocab), more elements than one grid row.
const SHAPES: [number, number, number][] = [
  [1, 1, 1],
  [7, 13, 5],
  [50, 64, 97],
  [300, 48, 1031],
  [40, 2051, 37],
];

describe('embedding', () => {
  for (const dtype of ['f32', 'f16'] as const) {
    for (const [vocab, hidden, tokens] of SHAPES) {
      it(`${dtype} forward vocab=${vocab} hidden=${hidden} T=${tokens}`, async (ctx) => {
        const gpu = await testGpu();
        if (dtype === 'f16' && !gpu.f16) return ctx.skip();
        const table = dtype === 'f16' ? roundF16(randn(vocab * hidden, vocab + hidden)) : randn(vocab * hidden, vocab + hidden);
        const ids = randInts(tokens, tokens, vocab);
        const t = gpu.upload(table, [vocab, hidden], dtype, 'table');
        // Rounded to f16 and back exactly, so the gather is exact in both paths.
        expect(relError(await gpu.readF32(embedding(gpu, t, ids)), embeddingRef(table, hidden, ids))).toBe(0);
        const idsT = gpu.upload(ids, [tokens], 'u32', 'ids');
        expect(relError(await gpu.readF32(embedding(gpu, t, idsT)), embeddingRef(table, hidden, ids))).toBe(0);
      });
    }
  }

  for (const [vocab, hidden, tokens] of SHAPES) {
    it(`backward vocab=${vocab} hidden=${hidden} T=${tokens}: deterministic scatter-add`, async () => {
      const gpu = await testGpu();
      const dY = randn(tokens * hidden, 7 * tokens + 1);
      const ids = randInts(tokens, 3 * tokens + 2, vocab);
      const initial = randn(vocab * hidden, vocab + 5);
      const ref = embeddingBackwardRef(dY, hidden, ids, initial);
      const dYT = gpu.upload(dY, [tokens, hidden], 'f32', 'dY');
      const runs: Float32Array[] = [];
      for (let k = 0; k < 2; k++) {
        const dE = gpu.upload(initial, [vocab, hidden], 'f32', 'dE');
        runs.push(await gpu.readF32(embeddingBackward(gpu, dYT, ids, dE)));
      }
      expect(relError(runs[0]!, ref)).toBeLessThan(1e-5);
      expect(runs[1]).toEqual(runs[0]);
    });
  }

  it('a scatter plan made once serves several backwards over the same ids, as the per-call path does', async () => {
    const gpu = await testGpu();
    const [vocab, hidden, tokens] = [37, 24, 53];
    const ids = randInts(tokens, 11, vocab);
    const plan = scatterPlan(gpu, ids, vocab);
    const initial = randn(vocab * hidden, 12);
    for (const seed of [13, 14]) {
      const dY = randn(tokens * hidden, seed);
      const dYT = gpu.upload(dY, [tokens, hidden], 'f32', 'dY');
      const viaPlan = await gpu.readF32(embeddingBackward(gpu, dYT, plan, gpu.upload(initial, [vocab, hidden], 'f32', 'dE')));
      const perCall = await gpu.readF32(embeddingBackward(gpu, dYT, ids, gpu.upload(initial, [vocab, hidden], 'f32', 'dE')));
      expect(viaPlan).toEqual(perCall);
      expect(relError(viaPlan, embeddingBackwardRef(dY, hidden, ids, initial))).toBeLessThan(1e-5);
    }
    const dY = gpu.upload(randn(tokens * hidden, 15), [tokens, hidden], 'f32', 'dY');
    expect(() => embeddingBackward(gpu, dY, plan, gpu.tensor([vocab + 1, hidden], 'f32', 'dE'))).toThrow(/scatter plan is for 37 rows, dE has 38/);
    expect(() => embeddingBackward(gpu, gpu.tensor([tokens - 1, hidden], 'f32', 'dY'), plan, gpu.tensor([vocab, hidden], 'f32', 'dE'))).toThrow(/expected \[53,24\]/);
    expect(() => scatterPlan(gpu, Uint32Array.from([3, 40]), vocab)).toThrow(/id 40 at position 1 is outside the vocabulary of 37/);
    plan.release();
  });

  it('rejects ids outside the vocabulary and bad shapes, naming them', async () => {
    const gpu = await testGpu();
    const t = gpu.upload(randn(20, 1), [5, 4], 'f32', 'embed_tokens');
    expect(() => embedding(gpu, t, Uint32Array.from([1, 5]))).toThrow(/id 5 at position 1 is outside the vocabulary of 5/);
    const dY = gpu.upload(randn(12, 2), [3, 4], 'f32', 'dY');
    expect(() => embeddingBackward(gpu, dY, Uint32Array.from([0, 1]), t)).toThrow(/dY has shape \[3,4\], expected \[2,4\]/);
  });
});
