import { describe, expect, it } from 'vitest';
import { roundF16 } from '../../src/gpu/dtype.ts';
import { add, addRow, mul, scale, silu } from '../../src/kernels/elementwise.ts';
import { testGpu } from '../helpers/gpu.ts';
import { randn, relError } from '../helpers/random.ts';
import { addRef, addRowRef, mulRef, scaleRef, siluRef } from '../ref/elementwise.ts';

// 16.8M elements need more than 65,535 workgroups: the 2-D grid path.
const SIZES = [1, 7, 255, 257, 4099, 70_001, 16_777_259];

describe('elementwise', () => {
  for (const dtype of ['f32', 'f16'] as const) {
    for (const n of SIZES) {
      it(`${dtype} n=${n}`, async (ctx) => {
        const gpu = await testGpu();
        if (dtype === 'f16' && !gpu.f16) return ctx.skip();
        const round = dtype === 'f16' ? roundF16 : (x: Float32Array) => x;
        const tol = dtype === 'f16' ? 2e-3 : 1e-6;
        const a = round(randn(n, 1 + n, 2));
        const b = round(randn(n, 2 + n, 2));
        const ta = gpu.upload(a, [n], dtype, 'a');
        const tb = gpu.upload(b, [n], dtype, 'b');
        expect(relError(await gpu.readF32(add(gpu, ta, tb)), addRef(a, b))).toBeLessThan(tol);
        expect(relError(await gpu.readF32(mul(gpu, ta, tb)), mulRef(a, b))).toBeLessThan(tol);
        expect(relError(await gpu.readF32(scale(gpu, ta, -1.75)), scaleRef(a, -1.75))).toBeLessThan(tol);
        expect(relError(await gpu.readF32(silu(gpu, ta)), siluRef(a))).toBeLessThan(tol);
        const row = 13;
        const m = round(randn(Math.ceil(n / row) * row, 3 + n, 2));
        const tm = gpu.upload(m, [m.length / row, row], dtype, 'matrix');
        const r = round(randn(row, 4 + n, 2));
        const tr = gpu.upload(r, [row], dtype, 'row');
        expect(relError(await gpu.readF32(addRow(gpu, tm, tr)), addRowRef(m, r))).toBeLessThan(tol);
      });
    }
  }

  it('rejects mismatched sizes, naming the tensor', async () => {
    const gpu = await testGpu();
    const a = gpu.upload(randn(8, 3), [8], 'f32', 'left');
    const b = gpu.upload(randn(9, 4), [9], 'f32', 'right');
    expect(() => add(gpu, a, b)).toThrow(/right has 9 elements/);
  });
});
