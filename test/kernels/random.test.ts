import { describe, expect, it } from 'vitest';
import { roundF16 } from '../../src/gpu/dtype.ts';
import { randomNormal } from '../../src/kernels/random.ts';
import { testGpu } from '../helpers/gpu.ts';
import { randomNormalRef } from '../ref/random.ts';

// 16.8M elements: the 2-D grid path.
const SIZES = [1, 7, 257, 70_001, 16_777_259];

function absError(a: Float32Array, b: Float32Array): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return Number.isNaN(m) ? Infinity : m;
}

describe('random_normal', () => {
  for (const dtype of ['f32', 'f16'] as const) {
    for (const n of SIZES) {
      it(`${dtype} n=${n}`, async (ctx) => {
        const gpu = await testGpu();
        if (dtype === 'f16' && !gpu.f16) return ctx.skip();
        const seed = 1234 + n;
        const mean = n % 2 ? 0.5 : 0;
        const std = 0.02 * (1 + (n % 3));
        const t = randomNormal(gpu, gpu.tensor([n], dtype, 'r'), seed, mean, std);
        const got = await gpu.readF32(t);
        let want = randomNormalRef(n, seed, mean, std);
        if (dtype === 'f16') want = roundF16(want);
        // GPU log/cos are f32 approximations (~1e-3 of z at the tails); f16 adds its own rounding.
        expect(absError(got, want)).toBeLessThan(dtype === 'f16' ? 2e-3 * (Math.abs(mean) + 5 * std) : 3e-3 * std);
        t.release();
      });
    }
  }

  it('has the requested mean and std, and differs by seed', async () => {
    const gpu = await testGpu();
    const n = 200_003;
    const a = await gpu.readF32(randomNormal(gpu, gpu.tensor([n], 'f32', 'a'), 7, 1, 0.02));
    const b = await gpu.readF32(randomNormal(gpu, gpu.tensor([n], 'f32', 'b'), 8, 1, 0.02));
    let sum = 0;
    let sq = 0;
    let same = 0;
    for (let i = 0; i < n; i++) {
      sum += a[i]!;
      sq += (a[i]! - 1) ** 2;
      if (a[i] === b[i]) same++;
    }
    expect(Math.abs(sum / n - 1)).toBeLessThan(2e-4);
    expect(Math.abs(Math.sqrt(sq / n) - 0.02)).toBeLessThan(5e-4);
    expect(same).toBeLessThan(n / 100);
  });

  it('rejects integer tensors, naming the kernel and tensor', async () => {
    const gpu = await testGpu();
    expect(() => randomNormal(gpu, gpu.tensor([4], 'u32', 'ints'), 1)).toThrow(/random_normal: ints is u32/);
  });
});
