// The tensor-core matmul (matmul variant 'tc', shaders/matmul_tc_tiled.wgsl) against the CPU reference: every
// layout, f32 and f16 operands, odd shapes and partial tiles, alpha and accumulation, every tile, and
// gradient-sized values (1e-9) that f16 alone would flush to zero. The reference multiplies the f16 copies the
// kernel makes (test/ref/matmul-tc.ts), so only f32 accumulation order separates them. Where the adapter has no
// subgroup matrices (the CPU drivers, wgpu) those cases are skipped and the variant must refuse, naming why;
// the scales (shaders/absmax_scale.wgsl) run everywhere.
import { describe, expect, it } from 'vitest';
import { f16BitsToF32, roundF16 } from '../../src/gpu/dtype.ts';
import { Uniforms, u32s } from '../../src/gpu/uniforms.ts';
import { matmulWith, pickMatmulVariant, setMatmulPolicy } from '../../src/kernels/matmul.ts';
import { absmaxScales, castDirectRows, directParts, TC_TILES, type TcTileName, TensorCoreError, tensorCoreDirectPartsPlan, tensorCoreDirectPlan, tensorCorePlan, tensorCoreUnavailable, tiledCastsA } from '../../src/kernels/matmul-tc.ts';
import type { Tensor } from '../../src/gpu/tensor.ts';
import { testGpu } from '../helpers/gpu.ts';
import { randn, relError } from '../helpers/random.ts';
import { matmulRef } from '../ref/matmul.ts';
import { rmsnormRef } from '../ref/rmsnorm.ts';
import { swigluRef } from '../ref/swiglu.ts';
import { swiglu } from '../../src/kernels/swiglu.ts';
import { absmaxScalesRef, tcOperandRef } from '../ref/matmul-tc.ts';

const gpu = await testGpu();
const noTensorCores = tensorCoreUnavailable(gpu);

/** The scales and f16 rows (words) a fused cast wrote are rows_f16's of the f32 y [R, L] it wrote, exactly; its
 * padding rows (R..RP-1) have scale 1 and zeros. */
async function expectCastOf(y: Tensor, gotY: Float32Array, scale: Tensor, words: Tensor, RP: number): Promise<void> {
  const [R, L] = y.shape as [number, number];
  const want = absmaxScalesRef(gotY, R, L, false);
  const got = await gpu.readF32(scale);
  expect(Array.from(got.subarray(0, R))).toEqual(Array.from(want));
  expect(got.subarray(R).every((v) => v === 1)).toBe(true);
  const bits = (await gpu.read(words)) as Uint32Array;
  const halves = new Float32Array(RP * L).map((_, j) => f16BitsToF32((bits[j >> 1]! >> ((j & 1) * 16)) & 0xffff));
  expect(Array.from(halves.subarray(0, R * L))).toEqual(Array.from(roundF16(gotY.map((v, j) => v * want[Math.floor(j / L)]!))));
  expect(halves.subarray(R * L).every((v) => v === 0)).toBe(true);
}

type Dt = 'f32' | 'f16';
interface Case {
  M: number;
  N: number;
  K: number;
  transA: boolean;
  transB: boolean;
  da: Dt;
  db: Dt;
  tile?: TcTileName;
  /** Magnitude of a's entries. */
  scale?: number;
}
const CASES: Case[] = [];
for (const [transA, transB] of [[false, true], [false, false], [true, false], [true, true]] as const) {
  for (const [da, db] of [['f32', 'f16'], ['f32', 'f32'], ['f16', 'f16']] as const) {
    CASES.push({ M: 130, N: 257, K: 129, transA, transB, da, db });
  }
  CASES.push({ M: 257, N: 70, K: 20, transA, transB, da: 'f32', db: 'f16', tile: '64x64k16' });
}
// K 77: x scaled in the fill; K 78: x cast to f16 rows first (tiledCastsA)
for (const tile of Object.keys(TC_TILES) as TcTileName[]) {
  for (const K of [77, 78]) CASES.push({ M: 300, N: 200, K, transA: false, transB: true, da: 'f32', db: 'f16', tile });
}
CASES.push({ M: 192, N: 128, K: 1000, transA: false, transB: false, da: 'f32', db: 'f16', scale: 1e-9 }); // dY·W, tiny gradients
CASES.push({ M: 64, N: 128, K: 4096, transA: true, transB: false, da: 'f32', db: 'f32', scale: 3e4 }); // large activations
CASES.push({ M: 1, N: 64, K: 64, transA: false, transB: true, da: 'f32', db: 'f16' });

const name = (c: Case) => `${c.transA ? 'Aᵀ' : 'A'}·${c.transB ? 'Bᵀ' : 'B'} ${c.M}x${c.N}x${c.K} ${c.da}/${c.db}${c.tile ? ` ${c.tile}` : ''}${c.scale ? ` |a|~${c.scale}` : ''}`;

describe('tiledCastsA', () => {
  it('casts f32 x·Wᵀ inputs of even K up to the byte limit, never a logits gradient', () => {
    expect(tiledCastsA({ M: 8192, K: 3072, transA: false }, 'f32')).toBe(true); // down_proj input of a training step
    expect(tiledCastsA({ M: 8192, K: 3071, transA: false }, 'f32')).toBe(false); // odd K: the fill scales x
    expect(tiledCastsA({ M: 8192, K: 3072, transA: true }, 'f32')).toBe(false);
    expect(tiledCastsA({ M: 8192, K: 3072, transA: false }, 'f16')).toBe(false);
    expect(tiledCastsA({ M: 2048, K: 151936, transA: false }, 'f32')).toBe(false); // lm_head.dx: 594 MiB of copy
  });
});

describe('matmul tc', () => {
  for (const c of CASES) {
    const skip = noTensorCores !== null || typeof tensorCorePlan(gpu, c, c.tile) === 'string';
    it.skipIf(skip)(`${name(c)} equals the CPU reference of its f16 inputs, then alpha and accumulate`, async () => {
      const { M, N, K, transA, transB } = c;
      const seed = M * 31 + N * 7 + K + (transA ? 1000 : 0) + (transB ? 2000 : 0);
      const round = (x: Float32Array, dt: Dt) => (dt === 'f16' ? roundF16(x) : x);
      const a = round(randn(M * K, seed, c.scale ?? 1), c.da);
      const b = round(randn(K * N, seed + 1), c.db);
      const ta = gpu.upload(a, transA ? [K, M] : [M, K], c.da, 'a');
      const tb = gpu.upload(b, transB ? [N, K] : [K, N], c.db, 'b');
      const a16 = tcOperandRef(a, M, K, transA, c.da === 'f32');
      const b16 = tcOperandRef(b, N, K, !transB, c.db === 'f32');
      const out = matmulWith(gpu, 'tc', ta, tb, { transA, transB, tcTile: c.tile });
      expect(relError(await gpu.readF32(out), matmulRef(a16, b16, M, N, K, { transA, transB }))).toBeLessThan(1e-5);
      // and within f16's precision of the exact product
      expect(relError(await gpu.readF32(out), matmulRef(a, b, M, N, K, { transA, transB }))).toBeLessThan(4e-3);
      const init = randn(M * N, seed + 2, 1e-3 * (c.scale ?? 1));
      gpu.write(out, init);
      matmulWith(gpu, 'tc', ta, tb, { transA, transB, tcTile: c.tile, alpha: -0.5, accumulate: true, out });
      expect(relError(await gpu.readF32(out), matmulRef(a16, b16, M, N, K, { transA, transB, alpha: -0.5, init }))).toBeLessThan(1e-5);
      for (const t of [ta, tb, out]) t.release();
    });
  }

  // Two or three weights in one matmul_tc_direct dispatch (q, k, v; gate, up), both versions: each out against the CPU
  // reference of its own product.
  const PARTS: [number, number[], number][] = [[256, [2048, 1024, 1024], 1024], [130, [3072, 3072], 1024], [17, [64, 128], 64]];
  for (const staged of [false, true]) for (const [M, Ns, K] of PARTS) {
    const weights = Ns.map((n) => ({ dtype: 'f16' as const, shape: [n, K], label: `w${n}` }));
    const plan = noTensorCores ?? tensorCoreDirectPartsPlan(gpu, M, K, weights, staged);
    const name = `direct${staged ? ' staged' : ''} parts ${M} rows x [${Ns}] x ${K} (${typeof plan === 'string' ? plan : `${plan.ks} subgroups over K`})`;
    it.skipIf(typeof plan === 'string')(`${name}: each out equals the CPU reference of its f16 inputs`, async () => {
      const a = randn(M * K, M + K, 3);
      for (let i = 0; i < M; i += 5) for (let k = 0; k < K; k++) a[i * K + k]! *= 1e-6;
      const bs = Ns.map((n, i) => roundF16(randn(n * K, K + 10 * i + 1)));
      const ta = gpu.upload(a, [M, K], 'f32', 'x');
      const tbs = bs.map((b, i) => gpu.upload(b, [Ns[i]!, K], 'f16', `w${i}`));
      const rows = castDirectRows(gpu, ta, 'parts');
      const outs = directParts(gpu, rows, tbs, Ns.map((_, i) => `part${i}`), staged);
      const a16 = tcOperandRef(a, M, K, false, true);
      for (const [i, out] of outs.entries()) {
        expect(relError(await gpu.readF32(out), matmulRef(a16, bs[i]!, M, Ns[i]!, K, { transB: true }))).toBeLessThan(1e-5);
      }
      rows.release();
      for (const t of [ta, ...tbs, ...outs]) t.release();
    });
  }

  it('directParts refuses weights it cannot take side by side, naming them', () => {
    const w = (n: number, k: number, dtype: 'f16' | 'f32' = 'f16') => ({ dtype, shape: [n, k], label: `w${n}x${k}` });
    expect(tensorCoreDirectPartsPlan(gpu, 256, 1024, [w(2048, 1024)])).toMatch(/two or three weights in one dispatch, not 1/);
    expect(tensorCoreDirectPartsPlan(gpu, 256, 1024, [w(2048, 1024), w(1024, 512)])).toMatch(/w1024x512 f16 \[1024,512\] is not an f16 weight \[N, 1024\]/);
    expect(tensorCoreDirectPartsPlan(gpu, 256, 1024, [w(2048, 1024), w(1024, 1024, 'f32')])).toMatch(/w1024x1024 f32 .* is not an f16 weight/);
    if (noTensorCores === null) expect(tensorCoreDirectPartsPlan(gpu, 256, 1024, [w(2048, 1024), w(1000, 1024)])).toMatch(/w1000x1024 has 1000 columns, not a multiple of 64|is not a multiple of 64/);
  });

  // matmul_tc_direct, both versions (fragments from storage; staged slices): x·Wᵀ with f16 W for batches of rows; odd
  // M (padding rows), K split across 1-8 subgroups (K 64 and 528 keep one: too shallow, and not a whole number of
  // steps a part), the staged version's 4-subgroup slices and its explicit split of 8 (128-deep slices), alpha and
  // accumulation.
  const DIRECT: [number, number, number, number?][] = [[17, 64, 64], [100, 192, 1024], [256, 3072, 1024], [200, 1024, 3072], [1000, 4096, 528], [1, 128, 256], [130, 128, 1024, 8]];
  for (const staged of [false, true]) for (const [M, N, K, splits] of DIRECT) {
    const plan = tensorCoreDirectPlan(gpu, { M, N, K, transA: false, transB: true }, 'f32', 'f16', splits, staged);
    const name = `direct${staged ? ' staged' : ''} ${M}x${N}x${K} (${typeof plan === 'string' ? plan : `${plan.ks} subgroups over K`})`;
    it.skipIf(typeof plan === 'string')(`${name} equals the CPU reference of its f16 inputs, then alpha and accumulate`, async () => {
      const a = randn(M * K, M + N, 3);
      for (let i = 0; i < M; i += 7) for (let k = 0; k < K; k++) a[i * K + k]! *= 1e-6; // rows whose f16 copy needs the scale
      const b = roundF16(randn(N * K, K + 1));
      const ta = gpu.upload(a, [M, K], 'f32', 'x');
      const tb = gpu.upload(b, [N, K], 'f16', 'w');
      const a16 = tcOperandRef(a, M, K, false, true);
      const out = matmulWith(gpu, 'tc_direct', ta, tb, { transB: true, tcSplits: splits, tcStaged: staged });
      expect(relError(await gpu.readF32(out), matmulRef(a16, b, M, N, K, { transB: true }))).toBeLessThan(1e-5);
      const init = randn(M * N, 9, 0.1);
      gpu.write(out, init);
      matmulWith(gpu, 'tc_direct', ta, tb, { transB: true, tcSplits: splits, tcStaged: staged, alpha: 0.25, accumulate: true, out });
      expect(relError(await gpu.readF32(out), matmulRef(a16, b, M, N, K, { transB: true, alpha: 0.25, init }))).toBeLessThan(1e-5);
      for (const t of [ta, tb, out]) t.release();
    });
  }

  it('absmax_scale rows_f16 writes x times its row scale as f16, padding rows zero with scale 1', async () => {
    const [R, L, RP] = [13, 38, 16];
    const x = randn(R * L, 11);
    for (let i = 0; i < R; i++) for (let l = 0; l < L; l++) x[i * L + l]! *= 10 ** (i % 9 - 6);
    for (let l = 0; l < L; l++) x[4 * L + l] = 0;
    const tx = gpu.upload(x, [R, L], 'f32', 'x');
    const scale = gpu.tensor([RP], 'f32', 'scale');
    const words = gpu.tensor([(RP * L) / 2], 'u32', 'x16');
    gpu.dispatch({ shader: 'absmax_scale', entry: 'rows_f16', uniforms: u32s(R, L, RP, 0), bindings: [tx, scale, words], workgroups: [RP], label: 'rows_f16' });
    const got = await gpu.readF32(scale);
    const want = absmaxScalesRef(x, R, L, false);
    expect(Array.from(got.subarray(0, R))).toEqual(Array.from(want));
    expect(Array.from(got.subarray(R))).toEqual([1, 1, 1]);
    const bits = (await gpu.read(words)) as Uint32Array;
    const halves = new Float32Array(RP * L).map((_, j) => f16BitsToF32((bits[j >> 1]! >> ((j & 1) * 16)) & 0xffff));
    const scaled = new Float32Array(R * L).map((_, j) => x[j]! * want[Math.floor(j / L)]!);
    expect(Array.from(halves.subarray(0, R * L))).toEqual(Array.from(roundF16(scaled)));
    expect(halves.subarray(R * L).every((v) => v === 0)).toBe(true);
    for (const t of [tx, scale, words]) t.release();
  });

  it('absmax_scale rows_f16_norm writes rmsnorm(x)·norm as f32 and, times its row scale, as f16; padding rows zero with scale 1', async () => {
    const [R, L, RP, eps] = [21, 534, 32, 1e-6];  // L: over one word a thread (256 threads a row)
    const x = randn(R * L, 31);
    for (let i = 0; i < R; i++) for (let l = 0; l < L; l++) x[i * L + l]! *= 10 ** (i % 7 - 3);
    const norm = randn(L, 32, 2);
    const [tx, tn] = [gpu.upload(x, [R, L], 'f32', 'x'), gpu.upload(norm, [L], 'f32', 'norm')];
    const [scale, words, y] = [gpu.tensor([RP], 'f32', 'scale'), gpu.tensor([(RP * L) / 2], 'u32', 'x16'), gpu.tensor([R, L], 'f32', 'y')];
    gpu.dispatch({ shader: 'absmax_scale', entry: 'rows_f16_norm', uniforms: new Uniforms().u32(R).u32(L).u32(RP).f32(eps), bindings: [tx, scale, words, tn, y], workgroups: [RP], label: 'rows_f16_norm' });
    const gotY = await gpu.readF32(y);
    expect(relError(gotY, rmsnormRef(x, norm, eps).y)).toBeLessThan(1e-6); // measured 1.1e-7 (SwiftShader)
    await expectCastOf(y, gotY, scale, words, RP);
    for (const t of [tx, tn, scale, words, y]) t.release();
  });

  it('absmax_scale rows_f16_glu writes swiglu()\'s h as f32 (bit for bit) and, times its row scale, as f16; padding rows zero with scale 1', async () => {
    // L over two words a thread (256 threads a row) with a partial last round
    const [R, L, RP] = [5, 1030, 8];
    const gate = randn(R * L, 41, 4);
    const up = randn(R * L, 42);
    for (let i = 0; i < R; i++) for (let l = 0; l < L; l++) up[i * L + l]! *= 10 ** (2 * i - 4);
    const [tg, tu] = [gpu.upload(gate, [R, L], 'f32', 'gate'), gpu.upload(up, [R, L], 'f32', 'up')];
    const [scale, words, y] = [gpu.tensor([RP], 'f32', 'scale'), gpu.tensor([(RP * L) / 2], 'u32', 'x16'), gpu.tensor([R, L], 'f32', 'y')];
    gpu.dispatch({ shader: 'absmax_scale', entry: 'rows_f16_glu', uniforms: u32s(R, L, RP, 0), bindings: [tg, scale, words, tu, y], workgroups: [RP], label: 'rows_f16_glu' });
    const h = swiglu(gpu, tg, tu);
    const gotY = await gpu.readF32(y);
    expect(Array.from(gotY)).toEqual(Array.from(await gpu.readF32(h)));
    expect(relError(gotY, swigluRef(gate, up))).toBeLessThan(5e-7); // measured 6.0e-8 (SwiftShader)
    await expectCastOf(y, gotY, scale, words, RP);
    for (const t of [tg, tu, scale, words, y, h]) t.release();
  });

  it('absmax_scale brings each row maximum into [2^14, 2^15), rows and strided, zeros and inf left at 1', async () => {
    const [R, L] = [37, 53];
    const x = randn(R * L, 5);
    for (let i = 0; i < R; i++) for (let l = 0; l < L; l++) x[i * L + l]! *= 10 ** (i % 19 - 12); // 1e-12 .. 1e6
    for (let l = 0; l < L; l++) x[3 * L + l] = 0;
    x[5 * L + 7] = Infinity;
    for (const strided of [false, true]) {
      // strided: the same rows stored transposed
      const stored = strided ? new Float32Array(R * L).map((_, j) => x[(j % R) * L + Math.floor(j / R)]!) : x;
      const got = await gpu.readF32(absmaxScales(gpu, gpu.upload(stored, strided ? [L, R] : [R, L], 'f32', 'x'), R, L, strided));
      const want = absmaxScalesRef(stored, R, L, strided);
      expect(Array.from(got)).toEqual(Array.from(want));
      expect(got[3]).toBe(1);
      expect(got[5]).toBe(1);
      for (let i = 0; i < R; i++) {
        if (i === 3 || i === 5) continue;
        let m = 0;
        for (let l = 0; l < L; l++) m = Math.max(m, Math.abs(x[i * L + l]!));
        expect(m * got[i]!).toBeGreaterThanOrEqual(2 ** 14);
        expect(m * got[i]!).toBeLessThan(2 ** 15);
      }
    }
  });

  it.skipIf(noTensorCores !== null)('direct and tiled: one f16 cast of x serves several products, with the numbers of a cast each; rows of another x are refused', async () => {
    const [M, K] = [150, 1024];
    const x = gpu.upload(randn(M * K, 21), [M, K], 'f32', 'x');
    const other = gpu.upload(randn(M * K, 22), [M, K], 'f32', 'other');
    const rows = castDirectRows(gpu, x, 'q+k');
    for (const N of [2048, 1024]) {
      const w = gpu.upload(roundF16(randn(N * K, N)), [N, K], 'f16', 'w');
      const shared = await gpu.readF32(matmulWith(gpu, 'tc_direct', x, w, { transB: true, x16: rows }));
      const own = await gpu.readF32(matmulWith(gpu, 'tc_direct', x, w, { transB: true }));
      expect(shared).toEqual(own);
      expect(() => matmulWith(gpu, 'tc_direct', other, w, { transB: true, x16: rows })).toThrow(/cast from x \[150,1024\], not from other/);
      expect(() => matmulWith(gpu, 'tile64', x, w, { transB: true, x16: rows })).toThrow(/runs on tile64, not on tensor cores/);
      // the tiled kernel takes the same rows
      const tiled = await gpu.readF32(matmulWith(gpu, 'tc', x, w, { transB: true, x16: rows }));
      expect(tiled).toEqual(await gpu.readF32(matmulWith(gpu, 'tc', x, w, { transB: true })));
      expect(relError(tiled, own)).toBeLessThan(1e-5);
      expect(() => matmulWith(gpu, 'tc', other, w, { transB: true, x16: rows })).toThrow(/cast from x \[150,1024\], not from other/);
    }
    rows.release();
  });

  it.skipIf(noTensorCores === null)('refuses where the device has no tensor cores, naming why; auto and tc policies keep the f32 kernels', () => {
    expect(() => castDirectRows(gpu, gpu.tensor([4, 64], 'f32', 'x'), 'q+k+v')).toThrow(TensorCoreError);
    const x = gpu.upload(randn(128 * 64, 1), [128, 64], 'f32', 'x');
    const w = gpu.upload(randn(128 * 64, 2), [128, 64], 'f32', 'w');
    expect(() => matmulWith(gpu, 'tc', x, w, { transB: true })).toThrow(TensorCoreError);
    expect(() => matmulWith(gpu, 'tc', x, w, { transB: true })).toThrow(noTensorCores!);
    const shape = { M: 4096, N: 4096, K: 4096, transA: false, transB: true };
    expect(pickMatmulVariant(gpu, shape)).not.toBe('tc');
    const before = setMatmulPolicy(gpu, 'tc');
    try {
      expect(pickMatmulVariant(gpu, shape)).not.toBe('tc');
    } finally {
      setMatmulPolicy(gpu, before);
    }
  });

  it.skipIf(noTensorCores !== null)('auto sends large products to tensor cores and small or LoRA-gradient ones to f32 tiles', () => {
    expect(pickMatmulVariant(gpu, { M: 8192, N: 1024, K: 1024, transA: false, transB: true })).toBe('tc');
    expect(pickMatmulVariant(gpu, { M: 8, N: 1024, K: 1024, transA: false, transB: true })).not.toBe('tc');
    expect(pickMatmulVariant(gpu, { M: 64, N: 1024, K: 8192, transA: true, transB: false })).not.toBe('tc');
    const rows = { M: 256, N: 3072, K: 1024, transA: false, transB: true };
    expect(pickMatmulVariant(gpu, rows, { a: 'f32', b: 'f16' })).toBe('tc_direct');
    expect(pickMatmulVariant(gpu, rows, { a: 'f32', b: 'f32' })).not.toBe('tc_direct');
    expect(pickMatmulVariant(gpu, { ...rows, M: 16 }, { a: 'f32', b: 'f16' })).toBe('rows');
    expect(pickMatmulVariant(gpu, { ...rows, M: 64 }, { a: 'f32', b: 'f16' })).not.toBe('tc_direct');
    // 65-128 rows: narrow outputs (k, v, o, down) stay on the f32 tiles, wide ones (q, gate, up) take tc_direct
    expect(pickMatmulVariant(gpu, { ...rows, M: 128 }, { a: 'f32', b: 'f16' })).toBe('tc_direct');
    expect(pickMatmulVariant(gpu, { ...rows, M: 100, N: 1024, K: 3072 }, { a: 'f32', b: 'f16' })).toBe('tile64v');
    expect(pickMatmulVariant(gpu, { ...rows, M: 129, N: 1024, K: 3072 }, { a: 'f32', b: 'f16' })).toBe('tc_direct');
  });
});
