import { describe, expect, it } from 'vitest';
import { roundF16 } from '../../src/gpu/dtype.ts';
import { softmax, softmaxBackward } from '../../src/kernels/softmax.ts';
import { testGpu } from '../helpers/gpu.ts';
import { maxElemRelError, randn, relError } from '../helpers/random.ts';
import { softmaxBackwardRef, softmaxRef } from '../ref/softmax.ts';

const SHAPES: [number, number][] = [
  [1, 1],
  [3, 7],
  [4, 256],
  [7, 1001],
  [2, 40_003],
];

describe('softmax', () => {
  for (const dtype of ['f32', 'f16'] as const) {
    for (const [rows, n] of SHAPES) {
      it(`${dtype} forward and backward [${rows}, ${n}]`, async (ctx) => {
        const gpu = await testGpu();
        if (dtype === 'f16' && !gpu.f16) return ctx.skip();
        const round = dtype === 'f16' ? roundF16 : (v: Float32Array) => v;
        const tol = dtype === 'f16' ? 2e-3 : 1e-5;
        // scale 4: logits far apart, so the max subtraction matters
        const x = round(randn(rows * n, rows * 17 + n, 4));
        const y = await gpu.readF32(softmax(gpu, gpu.upload(x, [rows, n], dtype, 'x')));
        const yRef = softmaxRef(x, rows, n);
        expect(relError(y, yRef)).toBeLessThan(tol);
        if (dtype === 'f32') expect(maxElemRelError(y, yRef, 1e-30)).toBeLessThan(1e-4);
        const yIn = round(yRef);
        const dy = round(randn(rows * n, rows * 19 + n));
        const ty = gpu.upload(yIn, [rows, n], dtype, 'y');
        const tdy = gpu.upload(dy, [rows, n], dtype, 'dy');
        const dx = await gpu.readF32(softmaxBackward(gpu, ty, tdy));
        expect(relError(dx, softmaxBackwardRef(yIn, dy, rows, n))).toBeLessThan(tol);
      });
    }
  }

  it('is stable for huge logits and gives 0 for -inf (masked) entries', async () => {
    const gpu = await testGpu();
    const x = new Float32Array([1e30, 1e30 - 1e24, -Infinity, 3, -Infinity, 88, 89, 90]);
    const y = await gpu.readF32(softmax(gpu, gpu.upload(x, [2, 4], 'f32', 'logits')));
    expect(relError(y, softmaxRef(x, 2, 4))).toBeLessThan(1e-6);
    expect(y[2]).toBe(0);
    expect(y[4]).toBe(0);
  });

  it('rejects mismatched shapes, naming the tensor', async () => {
    const gpu = await testGpu();
    const y = gpu.upload(randn(12, 1), [3, 4], 'f32', 'probs');
    const dy = gpu.upload(randn(12, 2), [4, 3], 'f32', 'grad');
    expect(() => softmaxBackward(gpu, y, dy)).toThrow(/grad has shape \[4,3\], expected \[3,4\]/);
  });
});
