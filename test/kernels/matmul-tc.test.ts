// The tensor-core matmul (matmul variant 'tc', shaders/matmul_tc_tiled.wgsl) against the CPU reference: every
// layout, f32 and f16 operands, odd shapes and partial tiles, alpha and accumulation, every tile, and
// gradient-sized values (1e-9) that f16 alone would flush to zero. The reference multiplies the f16 copies the
// kernel makes (test/ref/matmul-tc.ts), so only f32 accumulation order separates them. Where the adapter has no
// subgroup matrices (the CPU drivers, wgpu) those cases are skipped and the variant must refuse, naming why;
// the scales (shaders/absmax_scale.wgsl) run everywhere.
import { describe, expect, it } from 'vitest';
import { roundF16 } from '../../src/gpu/dtype.ts';
import { matmulWith, pickMatmulVariant, setMatmulPolicy } from '../../src/kernels/matmul.ts';
import { absmaxScales, TC_TILES, type TcTileName, TensorCoreError, tensorCorePlan, tensorCoreUnavailable } from '../../src/kernels/matmul-tc.ts';
import { testGpu } from '../helpers/gpu.ts';
import { randn, relError } from '../helpers/random.ts';
import { matmulRef } from '../ref/matmul.ts';
import { absmaxScalesRef, tcOperandRef } from '../ref/matmul-tc.ts';

const gpu = await testGpu();
const noTensorCores = tensorCoreUnavailable(gpu);

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
for (const tile of Object.keys(TC_TILES) as TcTileName[]) CASES.push({ M: 300, N: 200, K: 77, transA: false, transB: true, da: 'f32', db: 'f16', tile });
CASES.push({ M: 192, N: 128, K: 1000, transA: false, transB: false, da: 'f32', db: 'f16', scale: 1e-9 }); // dY·W, tiny gradients
CASES.push({ M: 64, N: 128, K: 4096, transA: true, transB: false, da: 'f32', db: 'f32', scale: 3e4 }); // large activations
CASES.push({ M: 1, N: 64, K: 64, transA: false, transB: true, da: 'f32', db: 'f16' });

const name = (c: Case) => `${c.transA ? 'Aᵀ' : 'A'}·${c.transB ? 'Bᵀ' : 'B'} ${c.M}x${c.N}x${c.K} ${c.da}/${c.db}${c.tile ? ` ${c.tile}` : ''}${c.scale ? ` |a|~${c.scale}` : ''}`;

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

  it.skipIf(noTensorCores === null)('refuses where the device has no tensor cores, naming why; auto and tc policies keep the f32 kernels', () => {
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
  });
});
