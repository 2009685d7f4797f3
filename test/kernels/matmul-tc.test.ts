// The tensor-core matmul (shaders/matmul_tc.wgsl) against the CPU reference on random f16 inputs, both
// tiles, several whole-tile shapes; where the adapter has no subgroup matrices (the CPU drivers, wgpu)
// those cases are skipped and matmulTc must refuse with the reason.
import { describe, expect, it } from 'vitest';
import { roundF16 } from '../../src/gpu/dtype.ts';
import { matmulTc, matmulTcPlan, TensorCoreError, type TcTile, type TcVersion } from '../../src/kernels/matmul-tc.ts';
import { testGpu } from '../helpers/gpu.ts';
import { randn } from '../helpers/random.ts';

const gpu = await testGpu();
const CASES: [number, number, number, TcTile, TcVersion][] = [
  [128, 64, 16, '64x32', 1],
  [256, 192, 48, '64x32', 1],
  [384, 128, 1040, '64x32', 1],
  [64, 64, 32, '32x32', 1],
  [192, 320, 80, '32x32', 1],
  [128, 64, 32, '64x32', 2],
  [384, 192, 1056, '64x32', 2],
  [192, 320, 96, '32x32', 2],
];

/** x·Wᵀ in doubles. */
function ref(x: Float32Array, w: Float32Array, M: number, N: number, K: number): Float64Array {
  const y = new Float64Array(M * N);
  for (let i = 0; i < M; i++) for (let j = 0; j < N; j++) {
    let acc = 0;
    for (let k = 0; k < K; k++) acc += x[i * K + k]! * w[j * K + k]!;
    y[i * N + j] = acc;
  }
  return y;
}

describe('matmul_tc', () => {
  for (const [M, N, K, tile, version] of CASES) {
    it.skipIf(typeof matmulTcPlan(gpu, M, N, K, tile, version) === 'string')(`v${version} ${tile} ${M}x${N}x${K} equals the CPU reference`, async () => {
      const x = roundF16(randn(M * K, M + K));
      const w = roundF16(randn(N * K, N + 7));
      const tx = gpu.upload(x, [M, K], 'f16', 'x');
      const tw = gpu.upload(w, [N, K], 'f16', 'w');
      const got = await gpu.readF32(matmulTc(gpu, tx, tw, { tile, version }));
      const want = ref(x, w, M, N, K);
      // f16 products are exact in f32; f32 accumulation over K terms of size ~sqrt(K)
      let worst = 0;
      for (let i = 0; i < want.length; i++) worst = Math.max(worst, Math.abs(got[i]! - want[i]!) / (Math.sqrt(K) + Math.abs(want[i]!)));
      expect(worst).toBeLessThan(1e-5);
    });
  }

  it('refuses what it cannot run, naming why', () => {
    expect(typeof matmulTcPlan(gpu, 100, 64, 16)).toBe('string');
    expect(typeof matmulTcPlan(gpu, 128, 64, 48, '64x32', 2)).toBe('string'); // version 2 wants K % 32 == 0
    const x = gpu.upload(roundF16(randn(100 * 16, 1)), [100, 16], gpu.f16 ? 'f16' : 'f32', 'x');
    const w = gpu.upload(roundF16(randn(64 * 16, 2)), [64, 16], gpu.f16 ? 'f16' : 'f32', 'w');
    if (gpu.f16) expect(() => matmulTc(gpu, x, w)).toThrow(TensorCoreError);
    expect(() => matmulTc(gpu, x, w)).toThrow(/matmul_tc/);
  });
});
