// Attention's backward on tensor cores (shaders/attention_backward_tc.wgsl) on the CPU drivers, its subgroup
// matrices emulated in plain WGSL (test/helpers/subgroup-matrix-emulation.ts). Under Deno (lavapipe has shader-f16)
// the four entry points run as written, f16 tiles included: dkdv with one subgroup a workgroup (two and the
// emulation's scratch outgrow lavapipe's 32 KiB of workgroup memory), dq_rows with two, as attentionBackward runs
// it (lavapipe takes 20-30 s to compile each entry point; the cases share them). Packed sequences
// straddle key and row tiles; each sequence's dO has its own magnitude (1e-6 to 3e4), which the per-sequence power of
// two must bring into f16's range. Each sequence's gradients are compared on their own (a global norm would hide a
// small sequence): against the CPU reference that rounds as the kernels do (attentionBackwardTcRef) and against
// exact attention's gradients. Under Node (SwiftShader has no f16) the shader is compiled only. On a GPU with
// subgroup matrices the kernels themselves run through attentionBackward (attention.test.ts).
import { describe, expect, it } from 'vitest';
import type { Gpu } from '../../src/gpu/gpu.ts';
import { perSequenceErrors, showErrors, starts, worstError } from '../helpers/attention.ts';
import { testGpu } from '../helpers/gpu.ts';
import { randn } from '../helpers/random.ts';
import { compileChecked, dispatchEntry, emulatedAttentionTc, storageBuffer, uniformBuffer } from '../helpers/wgsl-run.ts';
import { attentionBackwardRef, attentionBackwardTcRef, attentionRef, type RefDims } from '../ref/attention.ts';

interface Case {
  lens: number[];
  /** dO's scale per sequence */
  mags: number[];
  d: Required<RefDims>;
}

/** dq, dk and dv of the emulated kernels next to the two references. */
async function run(gpu: Gpu, c: Case, seed: number) {
  const { lens, mags, d } = c;
  const st = starts(lens);
  const T = st[st.length - 1]!;
  const group = d.nHeads / d.nKv;
  const q = randn(T * d.nHeads * d.headDim, seed, 1);
  const k = randn(T * d.nKv * d.headDim, seed + 1, 1);
  const v = randn(T * d.nKv * d.headDim, seed + 2, 1);
  const dO = randn(T * d.nHeads * d.headDim, seed + 3, 1);
  lens.forEach((_, s) => {
    for (let i = st[s]! * d.nHeads * d.headDim; i < st[s + 1]! * d.nHeads * d.headDim; i++) dO[i]! *= mags[s]!;
  });
  const fwd = attentionRef(q, k, v, st, d);
  const [o, lse] = [Float32Array.from(fwd.o), Float32Array.from(fwd.lse)];

  const one = await compileChecked(gpu, emulatedAttentionTc(gpu, 'attention_backward_tc', 1));
  const two = await compileChecked(gpu, emulatedAttentionTc(gpu, 'attention_backward_tc', 2));
  const params = new Uint32Array([T, d.nHeads, d.nKv, group, lens.length, 0, 0, 0]);
  new Float32Array(params.buffer).set([d.scale * Math.LOG2E, d.scale], 5);
  const readable = (n: number) => storageBuffer(gpu, new Float32Array(n).fill(NaN), GPUBufferUsage.COPY_SRC);
  const b = {
    p: uniformBuffer(gpu, params),
    q: storageBuffer(gpu, q),
    k: storageBuffer(gpu, k),
    v: storageBuffer(gpu, v),
    dO: storageBuffer(gpu, dO),
    stats: storageBuffer(gpu, new Float32Array(T * d.nHeads * 4)),
    seqStarts: storageBuffer(gpu, Uint32Array.from(st)),
    // outputs start as NaN: an element the kernels fail to write shows
    dk: readable(k.length),
    dv: readable(v.length),
    dq: readable(q.length),
    o: storageBuffer(gpu, o),
    lse: storageBuffer(gpu, lse),
    seqMax: storageBuffer(gpu, new Uint32Array(lens.length)),
  };
  const perRow = Math.ceil((T * d.nHeads) / 64);
  await dispatchEntry(gpu, one, 'delta', { 0: b.p, 4: b.dO, 5: b.stats, 6: b.seqStarts, 10: b.o, 11: b.lse, 12: b.seqMax }, [perRow]);
  await dispatchEntry(gpu, one, 'scales', { 0: b.p, 5: b.stats, 12: b.seqMax }, [perRow]);
  const kvBindings = { 0: b.p, 1: b.q, 2: b.k, 3: b.v, 4: b.dO, 5: b.stats };
  await dispatchEntry(gpu, one, 'dkdv', { ...kvBindings, 6: b.seqStarts, 7: b.dk, 8: b.dv }, [Math.ceil(T / 16), d.nKv]);
  await dispatchEntry(gpu, two, 'dq_rows', { ...kvBindings, 9: b.dq }, [Math.ceil((T * group) / 32), d.nKv]);
  const read = async (buffer: GPUBuffer, n: number) => new Float32Array(await gpu.readBytes(buffer, 0, n * 4, 'emulated attention backward'));
  const got = { dq: await read(b.dq, q.length), dk: await read(b.dk, k.length), dv: await read(b.dv, v.length) };
  for (const buffer of Object.values(b)) buffer.destroy();
  return { got, st, rounded: attentionBackwardTcRef(q, k, v, o, lse, dO, st, d), exact: attentionBackwardRef(q, k, v, dO, st, d) };
}

const isDeno = 'Deno' in globalThis;

describe.runIf(isDeno)('attention_backward_tc, subgroup matrices emulated (f16 tiles)', () => {
  const h = 1 / Math.sqrt(128);
  const cases: Case[] = [
    // 81 tokens: sequences starting inside key and row tiles, one of a single token, dO from 1e-6 to 300
    { lens: [1, 7, 33, 40], mags: [1, 1e-6, 300, 0.02], d: { nHeads: 4, nKv: 2, headDim: 128, scale: h } },
    { lens: [5, 40, 18], mags: [2e-3, 1, 3e4], d: { nHeads: 6, nKv: 2, headDim: 128, scale: h } },
    { lens: [50], mags: [1], d: { nHeads: 2, nKv: 2, headDim: 128, scale: 0.05 } },
  ];
  for (const c of cases) {
    it(`lens [${c.lens}] heads ${c.d.nHeads}/${c.d.nKv}, dO x [${c.mags}]: as the f16 reference, near exact gradients`, async (ctx) => {
      const gpu = await testGpu();
      if (!gpu.f16) return ctx.skip('no shader-f16');
      const { got, st, rounded, exact } = await run(gpu, c, 11 + c.lens.length);
      const tight = perSequenceErrors(got, rounded, st, c.mags, c.d);
      const loose = perSequenceErrors(got, exact, st, c.mags, c.d);
      console.log(`attention_backward_tc emulated, lens [${c.lens}], dq/dk/dv per sequence: vs f16 reference ${showErrors(tight)}; vs exact ${showErrors(loose)}`);
      // against the roundings modelled: f32 accumulation order, exp2, a probability or dS' rounded the other way
      // (measured: at most 2.2e-4)
      expect(worstError(tight)).toBeLessThan(5e-4);
      // against exact gradients: what f16 q, k, v, dO', P and dS' cost (measured: at most 1.1e-3)
      expect(worstError(loose)).toBeLessThan(3e-3);
    });
  }
});

describe('attention_backward_tc compiles (its matrix calls emulated)', () => {
  it('2 subgroups a workgroup, as attentionBackward runs it', async () => {
    const gpu = await testGpu();
    await compileChecked(gpu, emulatedAttentionTc(gpu, 'attention_backward_tc', 2));
  });
});
