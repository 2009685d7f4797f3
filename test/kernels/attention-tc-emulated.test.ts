// Attention on tensor cores (shaders/attention_prefill_tc.wgsl) on the CPU drivers, its subgroup matrices emulated
// in plain WGSL (test/helpers/subgroup-matrix-emulation.ts). Under Deno (lavapipe has shader-f16) the kernel runs as
// written, f16 tiles included, with 1 and 2 subgroups a workgroup (4, the default, and the emulation's scratch
// outgrow lavapipe's 32 KiB of workgroup memory), on packed sequences that straddle query and key tiles, GQA groups
// of 1-3 and a partial last tile: against the CPU reference that rounds as the kernel does (attentionTcRef) and
// against the exact one. Under Node (SwiftShader has no f16) it is compiled only, f16 read as f32. On a GPU with
// subgroup matrices the kernel itself runs through attentionPrefill (attention.test.ts).
import { describe, expect, it } from 'vitest';
import type { Gpu } from '../../src/gpu/gpu.ts';
import { starts } from '../helpers/attention.ts';
import { testGpu } from '../helpers/gpu.ts';
import { randn, relError } from '../helpers/random.ts';
import { compileChecked, dispatchEntry, emulatedAttentionTc, storageBuffer, uniformBuffer } from '../helpers/wgsl-run.ts';
import { attentionRef, attentionTcRef, type RefDims } from '../ref/attention.ts';

/** o and lse of the emulated kernel next to the two references. */
async function run(gpu: Gpu, lens: number[], d: Required<RefDims>, subgroups: number, seed: number) {
  const st = starts(lens);
  const T = st[st.length - 1]!;
  const group = d.nHeads / d.nKv;
  // q of the magnitude q_norm gives (unit RMS), so the scores span several units of log2
  const q = randn(T * d.nHeads * d.headDim, seed, 1);
  const k = randn(T * d.nKv * d.headDim, seed + 1, 1);
  const v = randn(T * d.nKv * d.headDim, seed + 2, 1);
  const module = await compileChecked(gpu, emulatedAttentionTc(gpu, 'attention_prefill_tc', subgroups));
  const params = new Uint32Array([T, d.nHeads, d.nKv, group, lens.length, 0, 0, 0]);
  new Float32Array(params.buffer)[5] = d.scale * Math.LOG2E;
  // outputs start as NaN: a row the kernel fails to write shows
  const o = storageBuffer(gpu, new Float32Array(q.length).fill(NaN), GPUBufferUsage.COPY_SRC);
  const lse = storageBuffer(gpu, new Float32Array(T * d.nHeads).fill(NaN), GPUBufferUsage.COPY_SRC);
  const buffers = [uniformBuffer(gpu, params), storageBuffer(gpu, q), storageBuffer(gpu, k), storageBuffer(gpu, v), storageBuffer(gpu, Uint32Array.from(st)), o, lse];
  await dispatchEntry(gpu, module, 'main', { ...buffers }, [Math.ceil((T * group) / (16 * subgroups)), d.nKv]);
  const got = {
    o: new Float32Array(await gpu.readBytes(o, 0, q.length * 4, 'emulated attention o')),
    lse: new Float32Array(await gpu.readBytes(lse, 0, T * d.nHeads * 4, 'emulated attention lse')),
  };
  for (const buffer of buffers) buffer.destroy();
  return { got, rounded: attentionTcRef(q, k, v, st, d), exact: attentionRef(q, k, v, st, d) };
}

const isDeno = 'Deno' in globalThis;

describe.runIf(isDeno)('attention_prefill_tc, subgroup matrices emulated (f16 tiles)', () => {
  const cases: { lens: number[]; d: Required<RefDims>; subgroups: number }[] = [
    // 342 flat rows over tiles of 32: sequences starting inside query and key tiles, one of a single token
    { lens: [1, 7, 33, 130], d: { nHeads: 4, nKv: 2, headDim: 128, scale: 1 / Math.sqrt(128) }, subgroups: 2 },
    { lens: [5, 40, 1, 17], d: { nHeads: 6, nKv: 2, headDim: 128, scale: 1 / Math.sqrt(128) }, subgroups: 1 },
    { lens: [70], d: { nHeads: 2, nKv: 2, headDim: 128, scale: 0.05 }, subgroups: 2 },
  ];
  for (const { lens, d, subgroups } of cases) {
    it(`lens [${lens}] heads ${d.nHeads}/${d.nKv}, ${subgroups} subgroup${subgroups > 1 ? 's' : ''}: as the f16 reference, near the exact one`, async (ctx) => {
      const gpu = await testGpu();
      if (!gpu.f16) return ctx.skip('no shader-f16');
      const { got, rounded, exact } = await run(gpu, lens, d, subgroups, 7 + lens.length);

      // against the roundings modelled: f32 accumulation order, exp2, the odd probability rounding the other way
      // (measured here: at most 3.9e-5 for o, 1.9e-7 for lse)
      expect(relError(got.o, rounded.o)).toBeLessThan(1e-4);
      expect(relError(got.lse, rounded.lse)).toBeLessThan(1e-6);
      // against exact attention: what f16 q, k, v and P cost (measured here: at most 5.8e-4 for o, 1.8e-4 for lse)
      expect(relError(got.o, exact.o)).toBeLessThan(2e-3);
      expect(relError(got.lse, exact.lse)).toBeLessThan(5e-4);
    });
  }
});

describe('attention_prefill_tc compiles (its matrix calls emulated)', () => {
  it('4 subgroups a workgroup, as attentionPrefill runs it', async () => {
    const gpu = await testGpu();
    await compileChecked(gpu, emulatedAttentionTc(gpu, 'attention_prefill_tc', 4));
  });
});
