import { describe, expect, it } from 'vitest';
import { benchAttention } from '../../bench/attention.ts';
import { backwardVersion } from '../../src/kernels/attention.ts';
import { testGpu } from '../helpers/gpu.ts';

describe('bench attention', () => {
  it('quick backward rows: the default version under the plain name, version 1 beside version 2', async () => {
    const gpu = await testGpu();
    const rows = await benchAttention(gpu, { quick: true, filter: 'attention_backward' });
    const name = 'attention_backward_f32_2x32_h4kv2d32';
    expect(rows.map((r) => r.name)).toEqual(backwardVersion(gpu, 32) === 2 ? [name, `${name}_v1`] : [name]);
    for (const r of rows) {
      expect(Number.isFinite(r.value)).toBe(true);
      expect(r.value).toBeGreaterThan(0);
      expect(r.unit).toBe('GFLOP/s');
    }
  });
});
