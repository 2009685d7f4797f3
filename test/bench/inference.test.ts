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

  it('quick decode at batch 1 adds the host time to record a command', async () => {
    const gpu = await testGpu();
    const rows = await benchInference(gpu, { quick: true, filter: 'decode_b1_' });
    const name = `inference_decode_b1_ctx32_tiny_${gpu.f16 ? 'f16' : 'f32'}`;
    expect(rows.map((r) => [r.name, r.unit])).toEqual([[name, 'tokens/s'], [`${name}_host_record_us_per_command`, 'us']]);
    for (const r of rows) expect(r.value).toBeGreaterThan(0);
  });

  it('rejects an unknown preset', async () => {
    const gpu = await testGpu();
    await expect(benchInference(gpu, { quick: false, preset: 'qwen3-9b' })).rejects.toThrow(/unknown preset qwen3-9b/);
  });
});
