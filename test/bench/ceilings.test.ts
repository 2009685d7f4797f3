// Ceilings of benchmark rows (bench/ceilings.ts): by the machine's name and the row's unit and kind.
import { describe, expect, it } from 'vitest';
import { ceilingOf } from '../../bench/ceilings.ts';

describe('ceilingOf', () => {
  const h200 = 'nvidia nvidia-h200';
  it('gives the H200 memory bandwidth to GB/s rows and the right peak to GFLOP/s rows', () => {
    expect(ceilingOf(h200, 'softmax_f32_4096x1024', 'GB/s')).toBe(4800);
    expect(ceilingOf(h200, 'matmul_tc128x128k16_f16_xWt_4096x4096x4096', 'GFLOP/s')).toBe(989_500);
    expect(ceilingOf(h200, 'matmul_f32_4096x4096x4096', 'GFLOP/s')).toBe(67_000);
  });
  it('gives none to tokens/s rows or to machines it does not know', () => {
    expect(ceilingOf(h200, 'inference_prefill_8x1024_qwen3-0.6b_f16', 'tokens/s')).toBeUndefined();
    expect(ceilingOf('google swiftshader (SwiftShader)', 'softmax_f32_8x300', 'GB/s')).toBeUndefined();
  });
});
