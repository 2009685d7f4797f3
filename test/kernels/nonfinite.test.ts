import { describe, expect, it } from 'vitest';
import { roundF16 } from '../../src/gpu/dtype.ts';
import { assertFinite, countNonFinite, findNonFinite, NonFiniteError, nonFiniteCounts } from '../../src/kernels/nonfinite.ts';
import { mulberry32 } from '../../src/util/mulberry32.ts';
import { testGpu } from '../helpers/gpu.ts';
import { randn } from '../helpers/random.ts';
import { nonFiniteRef } from '../ref/nonfinite.ts';

// Sizes: one element, odd (an f16 tensor ends mid-word), one workgroup and a bit, more words than the
// 1024 workgroups x 256 threads of one pass (the grid-stride loop).
const SIZES = [1, 7, 257, 4099, 300_001];
const SPECIALS = [NaN, Infinity, -Infinity];

/** Seeded random values with `k` specials at random places (the last element included for odd sizes). */
function withSpecials(n: number, k: number, seed: number): Float32Array {
  const x = randn(n, seed);
  const rnd = mulberry32(seed + 1);
  for (let j = 0; j < k; j++) x[Math.floor(rnd() * n)] = SPECIALS[j % 3]!;
  if (k > 0 && n > 1) x[n - 1] = NaN;
  return x;
}

describe('count_nonfinite', () => {
  for (const dtype of ['f32', 'f16'] as const) {
    for (const n of SIZES) {
      for (const k of [0, 1, 5]) {
        it(`${dtype} n=${n} with ${k} specials matches the CPU reference`, async (ctx) => {
          const gpu = await testGpu();
          if (dtype === 'f16' && !gpu.f16) return ctx.skip();
          const x = withSpecials(n, k, n * 7 + k);
          // f16 storage: what the GPU holds is the rounded value (so 1e5 would be Inf there too).
          const stored = dtype === 'f16' ? roundF16(x) : x;
          const t = gpu.upload(x, [n], dtype, 'x');
          const out = nonFiniteCounts(gpu, 1);
          countNonFinite(gpu, t, out);
          const got = (await gpu.read(out)) as Uint32Array;
          const want = nonFiniteRef(stored);
          expect([got[0], got[1]]).toEqual([want.count, want.first]);
          t.release();
          out.release();
        });
      }
    }
  }

  it('counts f16 overflow (a finite f32 weight too big for f16) as non-finite', async (ctx) => {
    const gpu = await testGpu();
    if (!gpu.f16) return ctx.skip();
    const x = randn(33, 3);
    x[20] = 1e5;
    const t = gpu.upload(x, [3, 11], 'f16', 'big');
    const r = await findNonFinite(gpu, [{ name: 'big', tensor: t }]);
    expect(r).toEqual([{ name: 'big', count: 1, first: 20, size: 33 }]);
    t.release();
  });

  it('checks many tensors with one read and names the bad ones', async () => {
    const gpu = await testGpu();
    const good = gpu.upload(randn(100, 1), [10, 10], 'f32', 'good');
    const badX = randn(64, 2);
    badX[9] = NaN;
    badX[40] = Infinity;
    const bad = gpu.upload(badX, [8, 8], 'f32', 'bad');
    const tensors = [{ name: 'model.layers.0.mlp.up_proj.weight', tensor: good }, { name: 'model.layers.1.self_attn.q_proj.weight', tensor: bad }];
    expect(await findNonFinite(gpu, tensors)).toEqual([{ name: 'model.layers.1.self_attn.q_proj.weight', count: 2, first: 9, size: 64 }]);
    await expect(assertFinite(gpu, 'weights w.safetensors', tensors)).rejects.toThrow(NonFiniteError);
    await expect(assertFinite(gpu, 'weights w.safetensors', tensors)).rejects.toThrow(/model\.layers\.1\.self_attn\.q_proj\.weight \[8, 8\]: 2 of 64 elements are NaN or Inf \(first at flat index 9\)/);
    await assertFinite(gpu, 'ok', [tensors[0]!]);
    good.release();
    bad.release();
  });
});
