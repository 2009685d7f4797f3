import { describe, expect, it } from 'vitest';
import { roundF16 } from '../../src/gpu/dtype.ts';
import { transpose } from '../../src/kernels/transpose.ts';
import { testGpu } from '../helpers/gpu.ts';
import { randn } from '../helpers/random.ts';
import { transposeRef } from '../ref/transpose.ts';

const SHAPES: [number, number][] = [
  [1, 1],
  [1, 37],
  [37, 1],
  [32, 32],
  [33, 65],
  [130, 257],
];

describe('transpose', () => {
  for (const dtype of ['f32', 'f16'] as const) {
    for (const [R, C] of SHAPES) {
      it(`${dtype} [${R}, ${C}]`, async (ctx) => {
        const gpu = await testGpu();
        if (dtype === 'f16' && !gpu.f16) return ctx.skip();
        const x = dtype === 'f16' ? roundF16(randn(R * C, R * 3 + C)) : randn(R * C, R * 3 + C);
        const out = transpose(gpu, gpu.upload(x, [R, C], dtype, 'x'));
        expect(out.shape).toEqual([C, R]);
        expect(Array.from(await gpu.readF32(out))).toEqual(Array.from(transposeRef(x, R, C)));
      });
    }
  }

  it('rejects a non-2-D input, naming it', async () => {
    const gpu = await testGpu();
    expect(() => transpose(gpu, gpu.upload(randn(8, 1), [2, 2, 2], 'f32', 'cube'))).toThrow(/cube has shape \[2,2,2\], expected 2-D/);
  });
});
