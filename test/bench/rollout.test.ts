import { describe, expect, it } from 'vitest';
import { benchRollout } from '../../bench/rollout.ts';
import { testGpu } from '../helpers/gpu.ts';

describe('benchRollout', () => {
  it('quick run gives tokens/s for the batch (and its prefills\' tokens), one sequence at each run-ahead depth and 3 adapters, and frees every engine', async () => {
    const gpu = await testGpu();
    const live = gpu.memory.liveBytes;
    const rows = await benchRollout(gpu, { quick: true });
    const depths = ['', '_no_run_ahead', '_run_ahead_1', '_run_ahead_3', ...(gpu.mapWaitsForQueue ? ['_run_ahead_6', '_run_ahead_8', '_eager_reads'] : [])];
    expect(rows.map((r) => [r.name, r.unit])).toEqual([
      ['rollout_tiny_4seq_4new_tok_per_s', 'tok/s'],
      ['rollout_tiny_4seq_peak_memory', 'GiB'],
      ['rollout_tiny_4seq_prefill_tokens', 'tokens'],
      ...depths.map((d) => [`rollout_tiny_1seq_4new${d}_tok_per_s`, 'tok/s']),
      ['rollout_tiny_4seq_4new_3lora_r64_tok_per_s', 'tok/s'],
      ['rollout_tiny_4seq_decode_floor_s_h200', 's'],
    ]);
    for (const r of rows) {
      expect(Number.isFinite(r.value)).toBe(true);
      expect(r.value).toBeGreaterThan(0);
    }
    // The timed run's prompts (5 and 9 tokens, 2 samples each) fill no 16-token page, so each sample computes its
    // whole prompt: the warm-up's prefills are not counted.
    expect(rows.find((r) => r.name === 'rollout_tiny_4seq_prefill_tokens')!.value).toBe(2 * (5 + 9));
    // Each engine's KV cache, the adapters and the weights are freed (an engine that kept its cache made Deno's
    // 1-sequence rows run out of memory on an H100, 2026-12-07).
    expect(gpu.memory.liveBytes).toBe(live);
  });
});
