// The GRPO update on a tiny random Qwen3 with hand-made trajectories of two roles:
// - one epoch, one mini-batch: the ratio π/π_old is exactly 1 (logp_old from the training forward);
// - the update does not depend on how trajectories are cut into micro-batches (every aggregation mode,
//   seq-mean-token-sum-norm included);
// - isolated policies: one mixed backward equals each adapter's own update on its own sub-batch;
// - a shared policy: each role's gradient norm is its own contribution, and the summed gradient is the
//   same as without measuring;
// - frozen roles are not trained; an unknown adapter is an error.
import { beforeAll, describe, expect, it } from 'vitest';
import type { Gpu } from '../../src/gpu/gpu.ts';
import { AdapterSet, LoraAdapter } from '../../src/model/lora.ts';
import { Qwen3Model } from '../../src/model/qwen3.ts';
import { AdamW } from '../../src/optim/adamw.ts';
import { grpoUpdate, type UpdateConfig } from '../../src/rl/grpo-update.ts';
import { LOSS_AGG_MODES } from '../../src/rl/loss.ts';
import type { Trajectory } from '../../src/rl/trajectory.ts';
import type { RoleType } from '../../src/workflows/types.ts';
import { testGpu } from '../helpers/gpu.ts';
import { mulberry32 } from '../../src/util/mulberry32.ts';
import { randomWeightMap, tinyConfig, uploadWeights } from '../helpers/tiny-qwen3.ts';

const config = tinyConfig();
let gpu: Gpu;
let model: Qwen3Model;

beforeAll(async () => {
  gpu = await testGpu();
  model = new Qwen3Model(gpu, config, uploadWeights(gpu, config, randomWeightMap(config, 3)));
});

/** Trajectories with seeded ids, odd lengths, advantages of both signs, two roles. */
function trajectories(adapterOf: (role: RoleType) => string | null): Trajectory[] {
  const next = mulberry32(11);
  const int = (n: number) => Math.floor(next() * n);
  const roles: RoleType[] = ['generator', 'generator', 'aggregator', 'generator', 'aggregator', 'generator'];
  return roles.map((role, i) => {
    const promptIds = Array.from({ length: 3 + int(6) }, () => 3 + int(90));
    const responseIds = Array.from({ length: 2 + int(7) }, () => 3 + int(90));
    return {
      episode: i,
      episodeId: `0:${i}`,
      taskId: `t${i % 2}`,
      role,
      slot: role === 'generator' ? `generator${i % 3}` : 'aggregator',
      turn: 0,
      call: 0,
      adapter: adapterOf(role),
      promptIds,
      responseIds,
      rolloutLogprobs: responseIds.map(() => -2.5),
      finishReason: 'stop',
      text: '',
      promptText: '',
      reward: i % 2,
      advantage: [1.3, -0.7, 0.9, -1.1, 0.4, 0.6][i]!,
      violation: null,
    } satisfies Trajectory;
  });
}

interface Setup {
  set: AdapterSet;
  opts: Map<string, AdamW>;
}

/** AdamW with eps far above |g|: its first step is lr·g/eps, linear in the gradient, so a gradient scaled by a
 * wrong factor shows in the weights (with the usual eps the first step is lr·sign(g) and would hide it). */
const LINEAR_EPS = 1e3;

function setup(names: string[], lr = 1e-2): Setup {
  const set = new AdapterSet();
  const opts = new Map<string, AdamW>();
  names.forEach((name, k) => {
    const a = set.add(LoraAdapter.create(gpu, name, config, { rank: 4, alpha: 8, targets: ['q_proj', 'v_proj', 'o_proj', 'down_proj'] }, { seed: 5 + k, randomB: 0.05 }));
    opts.set(name, new AdamW(gpu, a.parameters(), { lr, eps: LINEAR_EPS, weightDecay: 0, maxGradNorm: null }, name));
  });
  return { set, opts };
}

async function weights(s: Setup): Promise<Float32Array[]> {
  const out: Float32Array[] = [];
  for (const name of s.set.names) for (const p of s.set.get(name).parameters()) out.push((await gpu.readF32(p.param)).slice());
  return out;
}

function release(s: Setup): void {
  for (const o of s.opts.values()) o.release();
  s.set.release();
}

function maxDiff(a: Float32Array[], b: Float32Array[]): number {
  let m = 0;
  a.forEach((x, i) => x.forEach((v, j) => (m = Math.max(m, Math.abs(v - b[i]![j]!)))));
  return m;
}

const base: UpdateConfig = { temperature: 0.7, loss: { clipLow: 0.2, clipHigh: 0.28, dualClip: 3, agg: 'seq-mean-token-mean', normLength: 16 } };

describe('grpoUpdate', () => {
  it('one epoch, one mini-batch: the ratio is exactly 1 and nothing is clipped', async () => {
    const s = setup(['generator', 'aggregator']);
    const trajs = trajectories((r) => r);
    const r = await grpoUpdate(gpu, model, s.set, s.opts, trajs, { ...base, microBatchTokens: 40 }, 1e-2);
    for (const st of r.perTrajectory) {
      expect(st).not.toBeNull();
      expect(st!.loss!.ratioSum).toBe(st!.loss!.tokens);
      expect(st!.loss!.clipped).toBe(0);
      expect(st!.loss!.ppoKlSum).toBe(0);
      expect(st!.tokens).toBeGreaterThan(0);
      expect(st!.nllSum).toBeGreaterThan(0);
      // rollout log-probs were -2.5 everywhere: the drift is measured against the training forward
      expect(st!.driftSum).toBeGreaterThan(0);
    }
    expect(Object.keys(r.adapters).sort()).toEqual(['aggregator', 'generator']);
    expect(r.roleGradNorm.generator).toBe(r.adapters.generator!.gradNorm);
    expect(r.roleGradNorm.aggregator).toBe(r.adapters.aggregator!.gradNorm);
    release(s);
  });

  it('a step raises the log-probability of responses with A > 0 and lowers those with A < 0', async () => {
    const s = setup(['generator', 'aggregator'], 2e-2);
    const trajs = trajectories((x) => x);
    const first = await grpoUpdate(gpu, model, s.set, s.opts, trajs, base, 2e-2);
    const second = await grpoUpdate(gpu, model, s.set, s.opts, trajs, base, 0);
    trajs.forEach((t, i) => {
      const before = -first.perTrajectory[i]!.nllSum;
      const after = -second.perTrajectory[i]!.nllSum;
      expect([i, Math.sign(after - before)]).toEqual([i, Math.sign(t.advantage)]);
    });
    release(s);
  });

  it('two mini-batches: the second one sees ratios that moved', async () => {
    const s = setup(['generator', 'aggregator'], 5e-2);
    const r = await grpoUpdate(gpu, model, s.set, s.opts, trajectories((x) => x), { ...base, miniBatches: 2 }, 5e-2);
    const second = r.perTrajectory.slice(3);
    expect(second.some((st) => st!.loss!.ratioSum !== st!.loss!.tokens)).toBe(true);
    release(s);
  });

  for (const agg of LOSS_AGG_MODES) {
    it(`micro-batch split does not change the update (${agg})`, async () => {
      const run = async (microBatchTokens: number) => {
        const s = setup(['generator', 'aggregator']);
        await grpoUpdate(gpu, model, s.set, s.opts, trajectories((x) => x), { ...base, loss: { ...base.loss, agg }, microBatchTokens }, 10);
        const w = await weights(s);
        release(s);
        return w;
      };
      const one = await run(10_000);
      const many = await run(12); // about one sequence per micro-batch
      const before = await (async () => {
        const s = setup(['generator', 'aggregator']);
        const w = await weights(s);
        release(s);
        return w;
      })();
      expect(maxDiff(one, before)).toBeGreaterThan(1e-5); // the step moved the weights
      expect(maxDiff(one, many)).toBeLessThan(2e-6);
    });
  }

  it('isolated: one mixed backward equals each adapter updated on its own sub-batch', async () => {
    const trajs = trajectories((x) => x);
    const mixed = setup(['generator', 'aggregator']);
    await grpoUpdate(gpu, model, mixed.set, mixed.opts, trajs, base, 10);
    const together = await weights(mixed);
    release(mixed);
    const apart = setup(['generator', 'aggregator']);
    for (const role of ['generator', 'aggregator'] as const) {
      const only = trajs.map((t) => (t.role === role ? t : { ...t, adapter: null }));
      const one = new Map([[role, apart.opts.get(role)!]]);
      await grpoUpdate(gpu, model, apart.set, one, only, base, 10);
    }
    expect(maxDiff(together, await weights(apart))).toBeLessThan(2e-6);
    release(apart);
  });

  it('shared: per-role gradient norms are each role\'s own, and the update is unchanged by measuring them', async () => {
    const trajs = trajectories(() => 'policy');
    const measured = setup(['policy']);
    const r = await grpoUpdate(gpu, model, measured.set, measured.opts, trajs, { ...base, perRoleGradNorm: true }, 10);
    const wMeasured = await weights(measured);
    release(measured);
    const plain = setup(['policy']);
    const p = await grpoUpdate(gpu, model, plain.set, plain.opts, trajs, base, 10);
    expect(maxDiff(wMeasured, await weights(plain))).toBeLessThan(2e-6);
    release(plain);
    const g = r.roleGradNorm.generator!;
    const a = r.roleGradNorm.aggregator!;
    expect(g).toBeGreaterThan(0);
    expect(a).toBeGreaterThan(0);
    expect(g).not.toBeCloseTo(a, 3);
    // the total is the norm of the sum: within the triangle inequality, and not just either part
    const total = p.adapters.policy!.gradNorm;
    expect(total).toBeLessThanOrEqual(g + a + 1e-6);
    expect(total).toBeGreaterThanOrEqual(Math.abs(g - a) - 1e-6);
    // each role alone gives its own norm
    const alone = setup(['policy']);
    const onlyGen = trajs.map((t) => (t.role === 'generator' ? t : { ...t, adapter: null }));
    const rg = await grpoUpdate(gpu, model, alone.set, alone.opts, onlyGen, base, 1e-2);
    release(alone);
    // the shared loss normalises over all sequences, the alone one over the generator's: scale by the counts
    const nGen = trajs.filter((t) => t.role === 'generator').length;
    expect(rg.adapters.policy!.gradNorm * (nGen / trajs.length)).toBeCloseTo(g, 5);
  });

  it('frozen roles are not trained; an adapter without an optimizer is an error', async () => {
    const s = setup(['generator']);
    const trajs = trajectories((r) => (r === 'generator' ? 'generator' : null));
    const r = await grpoUpdate(gpu, model, s.set, s.opts, trajs, base, 1e-2);
    trajs.forEach((t, i) => expect(r.perTrajectory[i] === null).toBe(t.role === 'aggregator'));
    expect(r.roleGradNorm.aggregator).toBeUndefined();
    await expect(grpoUpdate(gpu, model, s.set, new Map(), trajs, base, 1e-2)).rejects.toThrow(/no optimizer/);
    release(s);
  });
});
