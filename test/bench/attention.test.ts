import { describe, expect, it } from 'vitest';
import { benchAttention } from '../../bench/attention.ts';
import { backwardVersion, pagedKernel, prefillKernel, prefillRows } from '../../src/kernels/attention.ts';
import { testGpu } from '../helpers/gpu.ts';

describe('bench attention', () => {
  it('quick prefill rows: the default kernel under the plain name, version 1 beside version 2', async () => {
    const gpu = await testGpu();
    const rows = await benchAttention(gpu, { quick: true, filter: 'attention_prefill_f32' });
    const name = 'attention_prefill_f32_2x32_h4kv2d32';
    const v1 = prefillRows(gpu, 32) === 8 ? [`_rows4`] : [];
    const want = prefillKernel(gpu, 32) === 'quad' ? [name, `${name}_v1`, ...v1.map((x) => name + x)] : [name, ...v1.map((x) => name + x)];
    expect(rows.map((r) => r.name)).toEqual(want);
    for (const r of rows) expect(r.value).toBeGreaterThan(0);
  });

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

  it('quick decode rows: the default kernel under the plain name, version 3 beside it', async () => {
    const gpu = await testGpu();
    const rows = await benchAttention(gpu, { quick: true, filter: 'attention_decode' });
    const cache = gpu.f16 ? 'f16cache' : 'f32cache';
    const names = (seqs: number) => {
      const n = `attention_decode_${cache}_${seqs}x40_h4kv2d32`;
      const v3 = pagedKernel(gpu, { nHeads: 4, nKv: 2, headDim: 32 }, gpu.f16 ? 'f16' : 'f32', seqs, { numSeqs: seqs, maxQueries: 1 }, 'decode3');
      return v3 === 'decode3' ? [n, `${n}_kvread`, `${n}_v3`, `${n}_v3_kvread`] : [n, `${n}_kvread`];
    };
    expect(rows.map((r) => r.name)).toEqual([...names(4), ...names(1)]);
    for (const r of rows) expect(r.value).toBeGreaterThan(0);
  });
});
