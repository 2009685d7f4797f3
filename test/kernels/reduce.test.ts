import { describe, expect, it } from 'vitest';
import { roundF16 } from '../../src/gpu/dtype.ts';
import { reduceRows, type ReduceOp } from '../../src/kernels/reduce.ts';
import { testGpu } from '../helpers/gpu.ts';
import { randn, relError } from '../helpers/random.ts';
import { reduceRef } from '../ref/reduce.ts';

// [rows, n]: single elements, rows shorter and longer than the 256-thread workgroup, a vocab-sized row.
const SHAPES: [number, number][] = [
  [1, 1],
  [3, 7],
  [5, 255],
  [2, 257],
  [33, 1000],
  [2, 151_937],
];
const OPS: ReduceOp[] = ['sum', 'max', 'sumsq'];

describe('reduce', () => {
  for (const dtype of ['f32', 'f16'] as const) {
    for (const [rows, n] of SHAPES) {
      it(`${dtype} [${rows}, ${n}]`, async (ctx) => {
        const gpu = await testGpu();
        if (dtype === 'f16' && !gpu.f16) return ctx.skip();
        const round = dtype === 'f16' ? roundF16 : (v: Float32Array) => v;
        // shifted off zero so sums do not cancel to nothing
        const x = round(randn(rows * n, rows * 31 + n).map((v) => v + 0.25));
        const tx = gpu.upload(x, [rows, n], dtype, 'x');
        for (const op of OPS) {
          const got = await gpu.readF32(reduceRows(gpu, tx, op));
          expect(relError(got, reduceRef(x, rows, n, op))).toBeLessThan(op === 'max' ? 1e-7 : 1e-5);
        }
      });
    }
  }

  it('reduces a 3-D tensor over its last dimension, and -inf rows to -inf', async () => {
    const gpu = await testGpu();
    const x = randn(2 * 3 * 9, 5);
    for (let i = 0; i < 9; i++) x[9 * 4 + i] = -Infinity;
    const got = await gpu.readF32(reduceRows(gpu, gpu.upload(x, [2, 3, 9], 'f32', 'x3'), 'max'));
    expect(Array.from(got)).toEqual(Array.from(reduceRef(x, 6, 9, 'max')));
    expect(got[4]).toBe(-Infinity);
  });

  it('rejects a wrong out shape, naming it', async () => {
    const gpu = await testGpu();
    const x = gpu.upload(randn(12, 1), [3, 4], 'f32', 'x');
    expect(() => reduceRows(gpu, x, 'sum', gpu.tensor([4], 'f32', 'sums'))).toThrow(/sums has shape \[4\], expected \[3\]/);
  });
});
