import { describe, expect, it } from 'vitest';
import { benchInference } from '../../bench/inference.ts';
import { testGpu } from '../helpers/gpu.ts';

describe('benchInference', () => {
  it('quick run gives a positive tokens/s row for each prefill and decode case', async () => {
    const gpu = await testGpu();
    const rows = await benchInference(gpu, { quick: true, filter: 'prefill_1x16' });
    expect(rows.map((r) => r.name)).toEqual([`inference_prefill_1x16_tiny_${gpu.f16 ? 'f16' : 'f32'}`]);
    for (const r of rows) {
      expect(r.unit).toBe('tokens/s');
      expect(r.value).toBeGreaterThan(0);
      expect(Number.isFinite(r.value)).toBe(true);
    }
  });

  it('rejects an unknown preset', async () => {
    const gpu = await testGpu();
    await expect(benchInference(gpu, { quick: false, preset: 'qwen3-9b' })).rejects.toThrow(/unknown preset qwen3-9b/);
  });
});
