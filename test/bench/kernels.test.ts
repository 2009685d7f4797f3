import { describe, expect, it } from 'vitest';
import { benchKernels, kernelCases } from '../../bench/kernels.ts';
import { testGpu } from '../helpers/gpu.ts';

describe('bench kernels', () => {
  it('quick run gives a finite, positive row per case, with unit and machine', async () => {
    const gpu = await testGpu();
    const rows = await benchKernels(gpu, { quick: true });
    const expected = kernelCases(true).filter((c) => gpu.f16 || !c.needsF16).map((c) => c.name);
    expect(rows.map((r) => r.name)).toEqual(expected);
    for (const r of rows) {
      expect(Number.isFinite(r.value)).toBe(true);
      expect(r.value).toBeGreaterThan(0);
      expect(['GFLOP/s', 'GB/s']).toContain(r.unit);
      expect(r.machine.length).toBeGreaterThan(0);
      expect(r.runtime).toBe(gpu.report.runtime);
    }
  });

  it('filter keeps only matching names', async () => {
    const gpu = await testGpu();
    const rows = await benchKernels(gpu, { quick: true, filter: 'softmax_f32' });
    expect(rows.map((r) => r.name)).toEqual(['softmax_f32_8x300']);
  });

  it('full case names are unique and include the brief’s examples', () => {
    const names = kernelCases(false).map((c) => c.name);
    expect(new Set(names).size).toBe(names.length);
    expect(names).toContain('matmul_f32_4096x4096x4096');
    expect(names).toContain('matmul_f32_xWt_2048x3072x1024');
    expect(names).toContain('matmul_f16w_xWt_1x151936x1024');
  });
});
