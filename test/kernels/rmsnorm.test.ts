import { describe, expect, it } from 'vitest';
import { roundF16 } from '../../src/gpu/dtype.ts';
import { addRmsnorm, rmsnorm, rmsnormBackward, ROWWISE_MAX_N } from '../../src/kernels/rmsnorm.ts';
import { dot, numericGrad } from '../helpers/finite-diff.ts';
import { testGpu } from '../helpers/gpu.ts';
import { randn, relError } from '../helpers/random.ts';
import { rmsnormBackwardRef, rmsnormRef } from '../ref/rmsnorm.ts';

// [shape, n]: hidden rows, per-head rows (q_norm over [T, heads, headDim]), odd sizes, > CHUNK rows,
// both sides of ROWWISE_MAX_N (one thread per row / one workgroup per row).
const CASES: [number[], number][] = [
  [[1, 2], 2], // n = 1 is degenerate: dx = 0 up to rounding
  [[3, ROWWISE_MAX_N], ROWWISE_MAX_N], // the longest rows of the one-thread-per-row path
  [[70, ROWWISE_MAX_N + 1], ROWWISE_MAX_N + 1], // the shortest of the workgroup-per-row path
  [[5, 4, 24], 24],
  [[7, 129], 129],
  [[300, 3, 16], 16],
  [[2, 1000], 1000],
];
const EPS = 1e-6;

describe('rmsnorm', () => {
  for (const dtype of ['f32', 'f16'] as const) {
    for (const [shape, n] of CASES) {
      it(`${dtype} [${shape}] forward and backward`, async (ctx) => {
        const gpu = await testGpu();
        if (dtype === 'f16' && !gpu.f16) return ctx.skip();
        const round = dtype === 'f16' ? roundF16 : (a: Float32Array) => a;
        const tol = dtype === 'f16' ? 3e-3 : 2e-5;
        const size = shape.reduce((a, b) => a * b, 1);
        const x = round(randn(size, size + 1, 3));
        const w = randn(n, n + 2);
        const dy = round(randn(size, size + 3));
        const xT = gpu.upload(x, shape, dtype, 'x');
        const wT = gpu.upload(w, [n], 'f32', 'w');
        const { y, rstd } = rmsnorm(gpu, xT, wT, EPS);
        const ref = rmsnormRef(x, w, EPS);
        expect(relError(await gpu.readF32(y), ref.y)).toBeLessThan(tol);
        expect(relError(await gpu.readF32(rstd), ref.rstd)).toBeLessThan(2e-5);
        const g = rmsnormBackward(gpu, xT, wT, rstd, gpu.upload(dy, shape, dtype, 'dy'), { wantDw: true });
        const gref = rmsnormBackwardRef(x, w, EPS, dy);
        expect(relError(await gpu.readF32(g.dx), gref.dx)).toBeLessThan(tol);
        expect(relError(await gpu.readF32(g.dw!), gref.dw)).toBeLessThan(dtype === 'f16' ? tol : 1e-4);
        // accumulate into an existing dw
        const dw0 = randn(n, 99);
        const dwT = gpu.upload(dw0, [n], 'f32', 'dw');
        rmsnormBackward(gpu, xT, wT, rstd, gpu.upload(dy, shape, dtype, 'dy'), { dw: dwT, accumulateDw: true });
        expect(relError(await gpu.readF32(dwT), gref.dw.map((v, i) => v + dw0[i]!))).toBeLessThan(dtype === 'f16' ? tol : 1e-4);
      });
    }
  }

  // The fused residual add + norm against the reference of its parts: h = x + r rounded to the storage type, then norm.
  for (const dtype of ['f32', 'f16'] as const) {
    for (const [shape, n] of CASES) {
      it(`${dtype} [${shape}] add + norm in one pass`, async (ctx) => {
        const gpu = await testGpu();
        if (dtype === 'f16' && !gpu.f16) return ctx.skip();
        const round = dtype === 'f16' ? roundF16 : (a: Float32Array) => a;
        const tol = dtype === 'f16' ? 3e-3 : 2e-5;
        const size = shape.reduce((a, b) => a * b, 1);
        const x = round(randn(size, size + 5, 2));
        const r = round(randn(size, size + 6, 3));
        const w = randn(n, n + 7);
        const h = round(x.map((v, i) => v + r[i]!));
        const { h: hT, y, rstd } = addRmsnorm(gpu, gpu.upload(x, shape, dtype, 'x'), gpu.upload(r, shape, dtype, 'r'), gpu.upload(w, [n], 'f32', 'w'), EPS);
        const ref = rmsnormRef(h, w, EPS);
        expect(hT.shape).toEqual(shape);
        expect(relError(await gpu.readF32(hT), h)).toBeLessThan(dtype === 'f16' ? 1e-3 : 1e-7);
        expect(relError(await gpu.readF32(y), ref.y)).toBeLessThan(tol);
        expect(relError(await gpu.readF32(rstd), ref.rstd)).toBeLessThan(2e-5);
      });
    }
  }

  it('reference backward matches finite differences', () => {
    const n = 6;
    const x = randn(3 * n, 11);
    const w = randn(n, 12);
    const dy = randn(3 * n, 13);
    const { dx, dw } = rmsnormBackwardRef(x, w, EPS, dy);
    expect(relError(dx, numericGrad((v) => dot(rmsnormRef(v, w, EPS).y, dy), x))).toBeLessThan(1e-6);
    expect(relError(dw, numericGrad((v) => dot(rmsnormRef(x, v, EPS).y, dy), w))).toBeLessThan(1e-6);
  });

  it('rejects a weight that does not fit the last dimension', async () => {
    const gpu = await testGpu();
    const x = gpu.upload(randn(12, 1), [3, 4], 'f32', 'hidden');
    const w = gpu.upload(randn(5, 2), [5], 'f32', 'input_layernorm');
    expect(() => rmsnorm(gpu, x, w, EPS)).toThrow(/hidden \[3,4\] does not end in input_layernorm's size 5/);
    const r = gpu.upload(randn(8, 3), [2, 4], 'f32', 'o_proj');
    const w4 = gpu.upload(randn(4, 4), [4], 'f32', 'post_attention_layernorm');
    expect(() => addRmsnorm(gpu, x, r, w4, EPS)).toThrow(/add_rmsnorm: o_proj/);
  });
});
