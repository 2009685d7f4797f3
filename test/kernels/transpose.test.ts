import { describe, expect, it } from 'vitest';
import { roundF16 } from '../../src/gpu/dtype.ts';
import { transpose, transposeInto } from '../../src/kernels/transpose.ts';
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

  // Into a block of a larger matrix (a LoRA bank slot): only the block changes.
  for (const [R, C, ld, base] of [[3, 5, 7, 11], [33, 40, 64, 64 * 40], [1, 9, 1, 2]] as const) {
    it(`[${R}, ${C}] into stride ${ld} at ${base}`, async () => {
      const gpu = await testGpu();
      const x = randn(R * C, R + C);
      const size = base + C * ld + 3;
      const before = randn(size, size);
      const out = gpu.upload(before, [size], 'f32', 'bank');
      transposeInto(gpu, gpu.upload(x, [R, C], 'f32', 'x'), out, ld, base);
      const want = Float32Array.from(before);
      for (let r = 0; r < R; r++) for (let c = 0; c < C; c++) want[base + c * ld + r] = x[r * C + c]!;
      expect(Array.from(await gpu.readF32(out))).toEqual(Array.from(want));
      expect(() => transposeInto(gpu, gpu.upload(x, [R, C], 'f32', 'x'), out, ld, size)).toThrow(/overflows bank/);
    });
  }

  it('rejects a non-2-D input, naming it', async () => {
    const gpu = await testGpu();
    expect(() => transpose(gpu, gpu.upload(randn(8, 1), [2, 2, 2], 'f32', 'cube'))).toThrow(/cube has shape \[2,2,2\], expected 2-D/);
  });
});
