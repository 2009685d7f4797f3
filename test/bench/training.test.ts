// The training benchmark's quick run: its rows, with finite positive values.
import { describe, expect, it } from 'vitest';
import { benchTraining } from '../../bench/training.ts';
import { testGpu } from '../helpers/gpu.ts';

describe('benchTraining', () => {
  it('quick run gives tokens/s, peak memory, largest buffer and largest activation rows', async () => {
    const gpu = await testGpu();
    const rows = await benchTraining(gpu, { quick: true });
    const prefix = `training_lora_r8_2x32_tiny_${gpu.f16 ? 'f16' : 'f32'}`;
    expect(rows.map((r) => r.name)).toEqual(['tok_per_s', 'peak_memory', 'largest_buffer', 'largest_activation'].map((n) => `${prefix}_${n}`));
    expect(rows.map((r) => r.unit)).toEqual(['tokens/s', 'GiB', 'MiB', 'MiB']);
    for (const r of rows) {
      expect(Number.isFinite(r.value), r.name).toBe(true);
      expect(r.value, r.name).toBeGreaterThan(0);
    }
    // The pool's largest buffer includes the estimate's largest activation.
    expect(rows[2]!.value).toBeGreaterThanOrEqual(rows[3]!.value);
  }, 300_000);

  it('rejects an unknown preset', async () => {
    const gpu = await testGpu();
    await expect(benchTraining(gpu, { quick: false, preset: 'qwen3-9b' })).rejects.toThrow(/unknown preset qwen3-9b/);
  });
});
