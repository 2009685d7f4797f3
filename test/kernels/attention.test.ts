import { describe, expect, it } from 'vitest';
import { type AttentionDims, attentionBackward, attentionTcUnavailable, quadKernelsUnavailable, backwardVersion, attentionPrefill, type PrefillKernel, prefillKernel, prefillRows, workgroupBytes } from '../../src/kernels/attention.ts';
import { perSequenceErrors, showErrors, starts, uploadQkv, worstError } from '../helpers/attention.ts';
import { testGpu } from '../helpers/gpu.ts';
import { randn, relError } from '../helpers/random.ts';
import { dot, numericGrad } from '../helpers/finite-diff.ts';
import { attentionBackwardRef, attentionBackwardTcRef, attentionRef, attentionTcRef } from '../ref/attention.ts';

// Version 1 (4 or 8 rows a thread) and version 2 ('quad': tiles of 32 flat rows and 16 keys): sequences that
// straddle tiles and start inside them, GQA groups of 1-3.
const PREFILL_CASES: { lens: number[]; dims: AttentionDims; rows: PrefillKernel }[] = [
  { lens: [1, 7, 33, 130], dims: { nHeads: 2, nKv: 2, headDim: 16 }, rows: 8 },
  { lens: [5, 40, 1], dims: { nHeads: 4, nKv: 2, headDim: 24 }, rows: 8 },
  { lens: [33, 17], dims: { nHeads: 6, nKv: 2, headDim: 64 }, rows: 4 },
  { lens: [70], dims: { nHeads: 2, nKv: 1, headDim: 128, scale: 0.05 }, rows: 4 },
  // 8 rows at head dim 128 needs more workgroup memory than CPU drivers give (H200: 48 KiB)
  { lens: [70], dims: { nHeads: 2, nKv: 1, headDim: 128, scale: 0.05 }, rows: 8 },
  { lens: [1, 7, 33, 130], dims: { nHeads: 2, nKv: 2, headDim: 16 }, rows: 'quad' },
  { lens: [5, 40, 1, 17], dims: { nHeads: 4, nKv: 2, headDim: 32 }, rows: 'quad' },
  { lens: [33, 17, 2], dims: { nHeads: 6, nKv: 2, headDim: 64 }, rows: 'quad' },
  { lens: [70], dims: { nHeads: 2, nKv: 1, headDim: 128, scale: 0.05 }, rows: 'quad' },
];

describe('attentionPrefill', () => {
  for (const { lens, dims, rows } of PREFILL_CASES) {
    it(`lens [${lens}] heads ${dims.nHeads}/${dims.nKv} hd ${dims.headDim} ${rows === 'quad' ? 'version 2' : `rows/thread ${rows}`}`, async (ctx) => {
      const gpu = await testGpu();
      if (rows === 'quad' && quadKernelsUnavailable(gpu, dims.headDim)) return ctx.skip(`version 2: ${quadKernelsUnavailable(gpu, dims.headDim)}`);
      if (rows !== 'quad' && workgroupBytes(rows === 8 ? 'prefill8' : 'prefill4', dims.headDim) > gpu.limits.maxComputeWorkgroupStorageSize) return ctx.skip();
      const st = starts(lens);
      const T = st[st.length - 1]!;
      const { q, k, v, tq, tk, tv } = uploadQkv(gpu, T, dims, 11 + T);
      const seq = gpu.upload(st, [st.length], 'u32', 'seqStarts');
      const { o, lse } = attentionPrefill(gpu, tq, tk, tv, seq, lens.length, dims, {}, rows);
      const ref = attentionRef(q, k, v, st, dims);
      expect(relError(await gpu.readF32(o), ref.o)).toBeLessThan(2e-5);
      expect(relError(await gpu.readF32(lse), ref.lse)).toBeLessThan(2e-5);
    });
  }

  it('runs version 2 by default wherever quads can run, and refuses it by name where they cannot', async () => {
    const gpu = await testGpu();
    expect(prefillKernel(gpu, 128)).toBe(quadKernelsUnavailable(gpu, 128) ? prefillRows(gpu, 128) : 'quad');
    expect(prefillKernel(gpu, 24)).toBe(prefillRows(gpu, 24));
    const dims = { nHeads: 2, nKv: 1, headDim: 24 };
    const { tq, tk, tv } = uploadQkv(gpu, 5, dims, 4);
    const seq = gpu.upload([0, 5], [2], 'u32', 'seqStarts');
    expect(() => attentionPrefill(gpu, tq, tk, tv, seq, 1, dims, {}, 'quad')).toThrow(/attention_prefill version 2 cannot run here: .*(head dim 24|subgroups)/);
  });

  it('rejects bad shapes, naming the tensor', async () => {
    const gpu = await testGpu();
    const dims = { nHeads: 4, nKv: 2, headDim: 16 };
    const { tq, tk } = uploadQkv(gpu, 5, dims, 3);
    const badV = gpu.upload(randn(5 * 16, 9), [5, 1, 16], 'f32', 'shortV');
    const seq = gpu.upload([0, 5], [2], 'u32', 'seqStarts');
    expect(() => attentionPrefill(gpu, tq, tk, badV, seq, 1, dims)).toThrow(/shortV has 80 elements/);
    expect(() => attentionPrefill(gpu, tq, tk, tk, seq, 1, { nHeads: 4, nKv: 3, headDim: 16 })).toThrow(/multiple of nKv/);
    expect(() => attentionPrefill(gpu, tq, tk, tk, seq, 2, dims)).toThrow(/seqStarts has 2 entries/);
  });
});

// Version 3 (tensor cores, attention_prefill_tc.wgsl: tiles of 64 flat rows and 32 keys, f16 q·scale, k, v and P) where
// the GPU has subgroup matrices; on the CPU drivers attention-tc-emulated.test.ts runs it with them emulated.
describe('attentionPrefill version 3 (tensor cores)', () => {
  const cases: { lens: number[]; dims: AttentionDims }[] = [
    { lens: [1, 7, 33, 130], dims: { nHeads: 4, nKv: 2, headDim: 128 } },
    { lens: [5, 40, 1, 17, 300], dims: { nHeads: 16, nKv: 8, headDim: 128 } },
    { lens: [70, 3], dims: { nHeads: 6, nKv: 2, headDim: 128, scale: 0.05 } },
    { lens: [129], dims: { nHeads: 2, nKv: 2, headDim: 128 } },
  ];
  for (const { lens, dims } of cases) {
    it(`lens [${lens}] heads ${dims.nHeads}/${dims.nKv}: as the reference of its f16 roundings, near exact attention`, async (ctx) => {
      const gpu = await testGpu();
      const why = attentionTcUnavailable(gpu, dims.headDim);
      if (why) return ctx.skip(`version 3: ${why}`);
      const st = starts(lens);
      const T = st[st.length - 1]!;
      const { q, k, v, tq, tk, tv } = uploadQkv(gpu, T, dims, 5 + T);
      const seq = gpu.upload(st, [st.length], 'u32', 'seqStarts');
      const { o, lse } = attentionPrefill(gpu, tq, tk, tv, seq, lens.length, dims, {}, 'tc');
      const [gotO, gotLse] = [await gpu.readF32(o), await gpu.readF32(lse)];
      const rounded = attentionTcRef(q, k, v, st, dims);
      const exact = attentionRef(q, k, v, st, dims);
      // the bounds of the emulated run (attention-tc-emulated.test.ts), lse's widened for the GPU's exp2 and log2
      expect(relError(gotO, rounded.o)).toBeLessThan(1e-4);
      expect(relError(gotLse, rounded.lse)).toBeLessThan(2e-6);
      expect(relError(gotO, exact.o)).toBeLessThan(2e-3);
      expect(relError(gotLse, exact.lse)).toBeLessThan(5e-4);
    });
  }

  it('refuses where it cannot run, naming why', async () => {
    const gpu = await testGpu();
    const dims = { nHeads: 2, nKv: 1, headDim: 64 };
    const { tq, tk, tv } = uploadQkv(gpu, 5, dims, 4);
    const seq = gpu.upload([0, 5], [2], 'u32', 'seqStarts');
    expect(attentionTcUnavailable(gpu, 64)).toMatch(/./);
    expect(() => attentionPrefill(gpu, tq, tk, tv, seq, 1, dims, {}, 'tc')).toThrow(/attention_prefill version 3 cannot run here: .*(head dim 64|subgroup|shader-f16)/);
    const at128 = attentionTcUnavailable(gpu, 128);
    if (at128) expect(at128).toMatch(/subgroup|shader-f16/);
  });
});

// Version 2 works in tiles of 32 keys / 32 flat rows: sequences that straddle tiles and start inside them.
const BACKWARD_CASES: { lens: number[]; dims: AttentionDims }[] = [
  { lens: [1, 7, 33, 13], dims: { nHeads: 2, nKv: 2, headDim: 16 } },
  { lens: [5, 20], dims: { nHeads: 6, nKv: 2, headDim: 24 } },
  { lens: [21], dims: { nHeads: 2, nKv: 1, headDim: 128, scale: 0.07 } },
  { lens: [37, 3, 30], dims: { nHeads: 4, nKv: 2, headDim: 64 } },
  { lens: [35, 20], dims: { nHeads: 3, nKv: 1, headDim: 48 } },
];

describe('attentionBackward', () => {
  it('runs version 2 by default wherever it can, and refuses it by name where it cannot', async () => {
    const gpu = await testGpu();
    expect(backwardVersion(gpu, 128)).toBe(quadKernelsUnavailable(gpu, 128) ? 1 : 2);
    expect(backwardVersion(gpu, 24)).toBe(1);
    expect(backwardVersion(gpu, 24, 1)).toBe(1);
    expect(() => backwardVersion(gpu, 24, 2)).toThrow(/version 2 cannot run here: .*head dim 24 is not a multiple of 16|no subgroups/);
  });

  it('the CPU reference matches finite differences', () => {
    const dims = { nHeads: 2, nKv: 1, headDim: 3 };
    const st = [0, 2, 5];
    const T = 5;
    const q = randn(T * 2 * 3, 1);
    const k = randn(T * 3, 2);
    const v = randn(T * 3, 3);
    const dO = randn(T * 2 * 3, 4);
    const ref = attentionBackwardRef(q, k, v, dO, st, dims);
    const f32 = (x: Float64Array) => Float32Array.from(x);
    const loss = (qq: Float32Array, kk: Float32Array, vv: Float32Array) => dot(attentionRef(qq, kk, vv, st, dims).o, dO);
    expect(relError(ref.dq, numericGrad((x) => loss(f32(x), k, v), q, 1e-3))).toBeLessThan(1e-4);
    expect(relError(ref.dk, numericGrad((x) => loss(q, f32(x), v), k, 1e-3))).toBeLessThan(1e-4);
    expect(relError(ref.dv, numericGrad((x) => loss(q, k, f32(x)), v, 1e-3))).toBeLessThan(1e-4);
  });

  for (const version of [1, 2] as const) for (const { lens, dims } of BACKWARD_CASES) {
    it(`version ${version}: lens [${lens}] heads ${dims.nHeads}/${dims.nKv} hd ${dims.headDim}`, async (ctx) => {
      const gpu = await testGpu();
      const why = version === 2 ? quadKernelsUnavailable(gpu, dims.headDim) : null;
      if (why) ctx.skip(why);
      const st = starts(lens);
      const T = st[st.length - 1]!;
      const { q, k, v, tq, tk, tv } = uploadQkv(gpu, T, dims, 31 + T);
      const dO = randn(q.length, 77, 1);
      const seq = gpu.upload(st, [st.length], 'u32', 'seqStarts');
      const { o, lse } = attentionPrefill(gpu, tq, tk, tv, seq, lens.length, dims, {}, prefillRows(gpu, dims.headDim));
      const g = attentionBackward(gpu, tq, tk, tv, o, lse, gpu.upload(dO, [T, dims.nHeads, dims.headDim], 'f32', 'dO'), seq, lens.length, dims, version);
      const ref = attentionBackwardRef(q, k, v, dO, st, dims);
      expect(relError(await gpu.readF32(g.dq), ref.dq)).toBeLessThan(5e-5);
      expect(relError(await gpu.readF32(g.dk), ref.dk)).toBeLessThan(5e-5);
      expect(relError(await gpu.readF32(g.dv), ref.dv)).toBeLessThan(5e-5);
    });
  }
});

// Version 3 (tensor cores, attention_backward_tc.wgsl: 32 keys or 32 flat rows a workgroup, f16 q, k, v, P, dS' and dO
// scaled by a power of two per sequence) where the GPU has subgroup matrices; on the CPU drivers
// attention-backward-tc-emulated.test.ts runs it with them emulated. dO's scale differs per sequence (1e-6 to 3e4).
describe('attentionBackward version 3 (tensor cores)', () => {
  const cases: { lens: number[]; mags: number[]; dims: AttentionDims }[] = [
    { lens: [1, 7, 33, 130], mags: [1, 1e-6, 300, 0.02], dims: { nHeads: 4, nKv: 2, headDim: 128 } },
    { lens: [5, 40, 1, 17, 300], mags: [2e-3, 1, 5, 3e4, 0.1], dims: { nHeads: 16, nKv: 8, headDim: 128 } },
    { lens: [70, 3], mags: [1, 1], dims: { nHeads: 6, nKv: 2, headDim: 128, scale: 0.05 } },
  ];
  for (const { lens, mags, dims } of cases) {
    it(`lens [${lens}] heads ${dims.nHeads}/${dims.nKv}: as the reference of its f16 roundings, near exact gradients`, async (ctx) => {
      const gpu = await testGpu();
      const why = attentionTcUnavailable(gpu, dims.headDim, 'backward');
      if (why) return ctx.skip(`version 3: ${why}`);
      const st = starts(lens);
      const T = st[st.length - 1]!;
      const { q, k, v, tq, tk, tv } = uploadQkv(gpu, T, dims, 41 + T);
      const dO = randn(q.length, 78, 1);
      const width = dims.nHeads * dims.headDim;
      lens.forEach((_, i) => {
        for (let j = st[i]! * width; j < st[i + 1]! * width; j++) dO[j]! *= mags[i]!;
      });
      const seq = gpu.upload(st, [st.length], 'u32', 'seqStarts');
      const { o, lse } = attentionPrefill(gpu, tq, tk, tv, seq, lens.length, dims, {}, prefillRows(gpu, dims.headDim));
      const g = attentionBackward(gpu, tq, tk, tv, o, lse, gpu.upload(dO, [T, dims.nHeads, dims.headDim], 'f32', 'dO'), seq, lens.length, dims, 3);
      const got = { dq: await gpu.readF32(g.dq), dk: await gpu.readF32(g.dk), dv: await gpu.readF32(g.dv) };
      const rounded = attentionBackwardTcRef(q, k, v, await gpu.readF32(o), await gpu.readF32(lse), dO, st, dims);
      const exact = attentionBackwardRef(q, k, v, dO, st, dims);
      const tight = perSequenceErrors(got, rounded, st, mags, dims);
      const loose = perSequenceErrors(got, exact, st, mags, dims);
      console.log(`attention_backward version 3, lens [${lens}], dq/dk/dv per sequence: vs f16 reference ${showErrors(tight)}; vs exact ${showErrors(loose)}`);
      // the bounds of the emulated run
      expect(worstError(tight)).toBeLessThan(5e-4);
      expect(worstError(loose)).toBeLessThan(3e-3);
    });
  }

  it('refuses where it cannot run, naming why', async () => {
    const gpu = await testGpu();
    expect(() => backwardVersion(gpu, 64, 3)).toThrow(/attention_backward version 3 cannot run here: .*(head dim 64|subgroup|shader-f16)/);
    const at128 = attentionTcUnavailable(gpu, 128, 'backward');
    if (at128) expect(() => backwardVersion(gpu, 128, 3)).toThrow(/version 3 cannot run here: .*(subgroup|shader-f16)/);
    else expect(backwardVersion(gpu, 128, 3)).toBe(3);
  });
});
