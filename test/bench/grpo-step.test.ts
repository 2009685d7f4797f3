// The GRPO-step benchmark's quick run: a row per phase, finite and positive, phases within the step's time.
import { describe, expect, it } from 'vitest';
import { benchGrpoStep } from '../../bench/grpo-step.ts';
import { testGpu } from '../helpers/gpu.ts';

describe('benchGrpoStep', () => {
  it('quick run gives step, rollout, reward and update seconds, tokens/s and tokens', async () => {
    const gpu = await testGpu();
    const rows = await benchGrpoStep(gpu, { quick: true });
    const p = 'grpo_voting_tiny';
    expect(rows.map((r) => r.name)).toEqual([`${p}_step_s`, `${p}_rollout_s`, `${p}_reward_s`, `${p}_update_s`, `${p}_tok_per_s`, `${p}_tokens`, `${p}_prefill_tokens`]);
    expect(rows.map((r) => r.unit)).toEqual(['s', 's', 's', 's', 'tokens/s', 'tokens', 'tokens']);
    for (const r of rows) {
      expect(Number.isFinite(r.value), r.name).toBe(true);
      expect(r.value, r.name).toBeGreaterThan(0);
    }
    const [step, rollout, reward, update] = rows.map((r) => r.value);
    expect(rollout! + reward! + update!).toBeLessThanOrEqual(step! * (1 + 1e-9) + 1e-6);
    // 2 episodes x (3 generator turns + 1 aggregator turn), 4 new tokens each, plus their prompts.
    expect(rows[5]!.value).toBeGreaterThan(8 * 4);
    // Prefills compute prompt tokens only (each call's first draw comes from its prefill): without sharing that is
    // every token but the 8 x 4 generated. The 6 generator turns share their prompt's full pages, so fewer.
    expect(rows[6]!.value).toBeLessThan(rows[5]!.value - 8 * 4);
  }, 300_000);

  it('rejects an unknown preset', async () => {
    const gpu = await testGpu();
    await expect(benchGrpoStep(gpu, { quick: false, preset: 'qwen3-9b' })).rejects.toThrow(/unknown preset qwen3-9b/);
  });
});
