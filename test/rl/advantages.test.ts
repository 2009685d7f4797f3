import { describe, expect, it } from 'vitest';
import { AdvantageError, episodeAdvantages, groupAdvantages, groupByKey, groupKeyString, grpoAdvantages } from '../../src/rl/advantages.ts';
import { rng } from '../helpers/random.ts';

// Independent two-pass reference in f64 with the unbiased (n − 1) variance.
function refGroup(r: number[]): number[] {
  if (r.length === 1) return [0];
  let mean = 0;
  for (const x of r) mean += x / r.length;
  let ss = 0;
  for (const x of r) ss += (x - mean) * (x - mean);
  const std = Math.sqrt(ss / (r.length - 1));
  return r.map((x) => (x - mean) / (std + 1e-6));
}

describe('GRPO advantages', () => {
  it('hand-checkable group: rewards 1,0,0,0', () => {
    // mean 0.25, unbiased var = (0.5625 + 3·0.0625)/3 = 0.25, std 0.5
    const a = groupAdvantages([1, 0, 0, 0]);
    expect(a[0]).toBeCloseTo(0.75 / (0.5 + 1e-6), 10);
    expect(a[1]).toBeCloseTo(-0.25 / (0.5 + 1e-6), 10);
  });

  it('singleton group -> 0; equal rewards -> 0', () => {
    expect(groupAdvantages([1])).toEqual([0]);
    expect(groupAdvantages([1, 1, 1])).toEqual([0, 0, 0]);
  });

  it('random groups interleaved match the reference, in input order', () => {
    const r = rng(7);
    const items = [];
    for (let i = 0; i < 200; i++) {
      items.push({ key: { taskId: `t${Math.floor(r() * 5)}`, roleSlot: r() < 0.5 ? 'generator0' : 'evaluator', turn: Math.floor(r() * 2) }, reward: r() < 0.4 ? 1 : r() });
    }
    const adv = grpoAdvantages(items);
    for (const g of groupByKey(items)) {
      const expected = refGroup(g.members.map((m) => m.reward));
      g.indices.forEach((idx, j) => expect(adv[idx]).toBeCloseTo(expected[j]!, 12));
      for (const m of g.members) expect(groupKeyString(m.key)).toBe(groupKeyString(g.key));
    }
    // every group's advantages sum to ~0
    for (const g of groupByKey(items)) expect(Math.abs(g.indices.reduce((s, i) => s + adv[i]!, 0))).toBeLessThan(1e-9);
  });

  it('keys are compared field by field, never by concatenated names', () => {
    const items = [
      { key: { taskId: 'a|b', roleSlot: 'c', turn: 0 }, reward: 1 },
      { key: { taskId: 'a', roleSlot: 'b|c', turn: 0 }, reward: 0 },
    ];
    expect(groupByKey(items)).toHaveLength(2);
    expect(grpoAdvantages(items)).toEqual([0, 0]);
  });

  it('episodes: Voting generator slots are separate groups; reward shared by all turns', () => {
    const eps = [1, 0, 0, 1].map((reward, e) => ({
      taskId: 'task-1',
      reward,
      trajectories: [
        { roleSlot: 'generator0', turn: 0, data: `e${e}g0` },
        { roleSlot: 'generator1', turn: 0, data: `e${e}g1` },
        { roleSlot: 'aggregator', turn: 0, data: `e${e}agg` },
      ],
    }));
    const out = episodeAdvantages(eps);
    expect(out).toHaveLength(12);
    expect(groupByKey(out)).toHaveLength(3);
    const g0 = out.filter((t) => t.key.roleSlot === 'generator0').map((t) => t.advantage);
    const expected = refGroup([1, 0, 0, 1]);
    g0.forEach((a, i) => expect(a).toBeCloseTo(expected[i]!, 12));
    expect(out[0]!.data).toBe('e0g0');
    expect(out[0]!.reward).toBe(1);
  });

  it('rejects bad keys and non-finite rewards', () => {
    expect(() => grpoAdvantages([{ key: { taskId: 't', roleSlot: 'g', turn: 0.5 }, reward: 1 }])).toThrow(AdvantageError);
    expect(() => grpoAdvantages([{ key: { taskId: 't', roleSlot: 'g', turn: 0 }, reward: NaN }])).toThrow(/not finite/);
  });

  it('modes: mean (Dr. GRPO) subtracts the group mean, none keeps the reward; singletons zero or the reward (verl)', () => {
    const r = [1, 0, 0, 1, 1];
    const m = 3 / 5;
    groupAdvantages(r, { mode: 'mean' }).forEach((a, i) => expect(a).toBeCloseTo(r[i]! - m, 12));
    expect(groupAdvantages(r, { mode: 'none' })).toEqual(r);
    expect(groupAdvantages([0.75], { singleton: 'reward' })).toEqual([0.75]);
    expect(groupAdvantages([0.75], { singleton: 'zero' })).toEqual([0]);
    expect(groupAdvantages([0.75], { mode: 'mean' })).toEqual([0]);
    const items = [
      { key: { taskId: 'a', roleSlot: 'g', turn: 0 }, reward: 1 },
      { key: { taskId: 'a', roleSlot: 'g', turn: 0 }, reward: 0 },
      { key: { taskId: 'b', roleSlot: 'g', turn: 0 }, reward: 1 },
    ];
    expect(grpoAdvantages(items, { mode: 'mean', singleton: 'reward' })).toEqual([0.5, -0.5, 1]);
    expect(() => groupAdvantages(r, { mode: 'median' as never })).toThrow(/unknown advantage mode/);
  });
});
