// The GRPO update of one step: every trainable trajectory (role turns whose role has an adapter) is
// packed into micro-batches of whole sequences, one adapter's trajectories together; each row goes through
// its own adapter (the per-row LoRA path the rollout engine uses too), so one backward updates every adapter
// of a mixed batch. Each micro-batch is recorded while the GPU runs the one before.
//  1. logp_old: a forward over every micro-batch before any update (verl recomputes old_log_prob the
//     same way), through the same kernels as the training forward: with one epoch and one mini-batch
//     the ratio π/π_old is exactly 1. The rollout engine's log-probs are kept only to measure drift.
//     With one epoch and one mini-batch the loss's own forward gives logp_old, and (without a KL term) the
//     gradient at ratio 1 is known before it, so lm_head runs once a micro-batch (lossAndGradientsAhead).
//  2. per mini-batch: loss and gradients of each micro-batch (accumulated), then one AdamW step per
//     adapter with its own global-norm clip (under isolated policies that is per role type, as the
//     study's trainer updates each role's sub-batch separately; its loss is normalised over that role's
//     sub-batch). Under a shared policy the micro-batches run role by role, and each role's gradient
//     norm is measured before the roles' gradients are summed.
import type { Gpu } from '../gpu/gpu.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { add } from '../kernels/elementwise.ts';
import { lossAndGradients, lossAndGradientsAhead, nextTokenBatch, type TokenStats, type TrainBatch, tokenLogprobs } from '../model/backward.ts';
import type { AdapterSet } from '../model/lora.ts';
import type { Qwen3Model } from '../model/qwen3.ts';
import type { AdamW, StepResult } from '../optim/adamw.ts';
import type { RoleType } from '../workflows/types.ts';
import { type LossResult, type PolicyLossOptions, policyLoss, policyLossGradsAtRatioOne, readSeqStats, releaseLossResult, type SeqStats } from './loss.ts';
import type { Trajectory } from './trajectory.ts';

export interface UpdateConfig {
  /** Softmax temperature of the log-probabilities: the sampling temperature (as verl). */
  temperature: number;
  loss: Omit<PolicyLossOptions, 'tokenTotal' | 'seqTotal'>;
  /** Mini-batches per step (each one optimizer step per adapter). Default 1. */
  miniBatches?: number;
  /** Passes over the step's trajectories. Default 1. */
  epochs?: number;
  /** Most tokens (prompt + response) in one micro-batch. Default 4096. */
  microBatchTokens?: number;
  /** Shared policy: run micro-batches role by role and measure each role's gradient norm before the sum. */
  perRoleGradNorm?: boolean;
}

/** What one trajectory's tokens gave in the update (sums over its response tokens). */
export interface TrajectoryStats {
  tokens: number;
  /** Σ −logp_old (for perplexity). */
  nllSum: number;
  entropySum: number;
  /** Σ |logp_rollout − logp_old|. */
  driftSum: number;
  /** From the last pass's loss (sums over tokens). */
  loss: SeqStats | null;
}

export interface UpdateResult {
  /** Per trajectory of the input list (null: not trained, e.g. a frozen role or an empty response). */
  perTrajectory: (TrajectoryStats | null)[];
  /** Per adapter, the last optimizer step. */
  adapters: Record<string, StepResult>;
  /** Per role type: its gradient norm before clipping (its adapter's, or its own contribution under a shared policy). */
  roleGradNorm: Partial<Record<RoleType, number>>;
  /** An optimizer step of some adapter was skipped (non-finite gradient). */
  skipped: boolean;
}

export class UpdateError extends Error {
  override name = 'UpdateError';
}

interface Packed {
  members: number[];
  batch: TrainBatch & { mask: Float32Array; seqStarts: Uint32Array };
  rowAdapters: (string | null)[];
  /** Per member: offset of its first response token's position in the packed batch (position predicting it). */
  responseStart: number[];
}

/** Packs trajectories (by index) for next-token prediction; the mask covers response tokens only. */
function pack(trajs: readonly Trajectory[], members: number[]): Packed {
  const seqs = members.map((i) => [...trajs[i]!.promptIds, ...trajs[i]!.responseIds]);
  const batch = nextTokenBatch(seqs);
  const rowAdapters: (string | null)[] = [];
  const responseStart: number[] = [];
  batch.mask.fill(0);
  members.forEach((i, k) => {
    const t = trajs[i]!;
    const start = batch.seqStarts[k]!;
    for (let j = 0; j < seqs[k]!.length; j++) rowAdapters.push(t.adapter);
    // Position p predicts token p+1: response token j is predicted at start + promptLen − 1 + j.
    const first = start + t.promptIds.length - 1;
    responseStart.push(first);
    for (let j = 0; j < t.responseIds.length; j++) batch.mask[first + j] = 1;
  });
  return { members, batch, rowAdapters, responseStart };
}

/** Splits indices into micro-batches of at most `budget` tokens (a longer sequence gets its own). */
function microBatches(trajs: readonly Trajectory[], indices: number[], budget: number): number[][] {
  const out: number[][] = [];
  let cur: number[] = [];
  let tokens = 0;
  for (const i of indices) {
    const n = trajs[i]!.promptIds.length + trajs[i]!.responseIds.length;
    if (cur.length && tokens + n > budget) {
      out.push(cur);
      cur = [];
      tokens = 0;
    }
    cur.push(i);
    tokens += n;
  }
  if (cur.length) out.push(cur);
  return out;
}

export async function grpoUpdate(
  gpu: Gpu,
  model: Qwen3Model,
  adapters: AdapterSet,
  optimizers: ReadonlyMap<string, AdamW>,
  trajs: readonly Trajectory[],
  cfg: UpdateConfig,
  lr: number,
): Promise<UpdateResult> {
  const trainable = trajs.map((t, i) => (t.adapter !== null && t.responseIds.length > 0 ? i : -1)).filter((i) => i >= 0);
  for (const i of trainable) {
    const name = trajs[i]!.adapter!;
    if (!optimizers.has(name)) throw new UpdateError(`trajectory ${trajs[i]!.episodeId}/${trajs[i]!.slot}: adapter ${name} has no optimizer`);
  }
  const perTrajectory: (TrajectoryStats | null)[] = trajs.map(() => null);
  const result: UpdateResult = { perTrajectory, adapters: {}, roleGradNorm: {}, skipped: false };
  if (!trainable.length) return result;
  const nMini = Math.min(cfg.miniBatches ?? 1, trainable.length);
  const epochs = cfg.epochs ?? 1;
  const budget = cfg.microBatchTokens ?? 4096;
  if (!Number.isInteger(nMini) || nMini < 1) throw new UpdateError(`miniBatches must be a positive integer, got ${cfg.miniBatches}`);
  if (!Number.isInteger(epochs) || epochs < 1) throw new UpdateError(`epochs must be a positive integer, got ${cfg.epochs}`);

  // Mini-batches in trajectory order; within one, micro-batches (role by role when measuring per role).
  const minis: number[][] = [];
  const per = Math.ceil(trainable.length / nMini);
  for (let m = 0; m < trainable.length; m += per) minis.push(trainable.slice(m, m + per));
  const roleOrder = (idx: number[]): number[][] => {
    if (!cfg.perRoleGradNorm) return [idx];
    const byRole = new Map<RoleType, number[]>();
    for (const i of idx) {
      const r = trajs[i]!.role;
      if (!byRole.has(r)) byRole.set(r, []);
      byRole.get(r)!.push(i);
    }
    return [...byRole.values()];
  };
  // Within a group, trajectories of one adapter go together: a micro-batch of one adapter's rows runs its
  // backward on the whole batch, without gathering and scattering each adapter's rows (LoraBank.forRows).
  const byAdapter = (idx: number[]) => [...idx].sort((a, b) => (trajs[a]!.adapter! < trajs[b]!.adapter! ? -1 : trajs[a]!.adapter! > trajs[b]!.adapter! ? 1 : a - b));
  const plan = minis.map((mini) => roleOrder(mini).map((group) => microBatches(trajs, byAdapter(group), budget).map((m) => pack(trajs, m))));

  // 1. logp_old for every micro-batch, before any update. With one epoch and one mini-batch nothing is
  // updated before the loss: the loss's own forward gives logp_old (detached), the same numbers, one pass fewer.
  const logpOld = new Map<number, Float32Array>();
  const onePass = epochs === 1 && plan.length === 1;
  for (const mini of onePass ? [] : plan) {
    for (const group of mini) {
      for (const p of group) {
        const rows = adapters.rows(p.rowAdapters);
        const s = tokenLogprobs(model, p.batch, { adapter: rows, temperature: cfg.temperature });
        rows.release();
        const [lp, ent] = await Promise.all([gpu.readF32(s.logp), gpu.readF32(s.entropy)]);
        s.logp.release();
        s.entropy.release();
        recordOld(trajs, p, lp, ent, logpOld, perTrajectory);
      }
    }
  }

  // 2. updates.
  for (let epoch = 0; epoch < epochs; epoch++) {
    for (let m = 0; m < plan.length; m++) {
      const mini = minis[m]!;
      // Loss normalisation: over the adapter's own sequences / tokens in this mini-batch.
      const seqTotal = new Map<string, number>();
      const tokenTotal = new Map<string, number>();
      for (const i of mini) {
        const a = trajs[i]!.adapter!;
        seqTotal.set(a, (seqTotal.get(a) ?? 0) + 1);
        tokenTotal.set(a, (tokenTotal.get(a) ?? 0) + trajs[i]!.responseIds.length);
      }
      const sharedSums = cfg.perRoleGradNorm ? new RoleGradSums(gpu, [...optimizers.entries()].filter(([n]) => seqTotal.has(n)).map(([, o]) => o)) : null;
      for (const group of plan[m]!) {
        // Each micro-batch is recorded while the GPU still runs the one before (whose reads are awaited only
        // then), so the GPU does not wait for the host to record the next forward and backward.
        let running: Promise<void> | null = null;
        for (const p of group) {
          const reads = microStep(gpu, model, adapters, trajs, p, onePass ? null : logpOld, cfg, seqTotal, tokenTotal, perTrajectory);
          reads.catch(() => {});
          if (running) await running;
          running = reads;
        }
        await running;
        if (sharedSums) result.roleGradNorm[trajs[group[0]!.members[0]!]!.role] = await sharedSums.takeRole();
      }
      sharedSums?.restore();
      for (const [name, opt] of optimizers) {
        if (!seqTotal.has(name)) continue;
        // AdamW tells the adapter (markUpdated), so the engine serves the new weights next step.
        const r = await opt.step(lr);
        result.adapters[name] = r;
        if (r.skipped) result.skipped = true;
      }
    }
  }
  if (!cfg.perRoleGradNorm) {
    for (const i of trainable) {
      const t = trajs[i]!;
      const r = result.adapters[t.adapter!];
      if (r) result.roleGradNorm[t.role] = r.gradNorm;
    }
  }
  return result;
}

/** Keeps each member's logp_old and its token sums (NLL, entropy, rollout drift) from a forward's logp / entropy. */
function recordOld(trajs: readonly Trajectory[], p: Packed, lp: Float32Array, ent: Float32Array, logpOld: Map<number, Float32Array>, perTrajectory: (TrajectoryStats | null)[]): void {
  p.members.forEach((i, k) => {
    const t = trajs[i]!;
    const n = t.responseIds.length;
    const first = p.responseStart[k]!;
    const old = lp.slice(first, first + n);
    logpOld.set(i, old);
    let nll = 0;
    let entropy = 0;
    let drift = 0;
    for (let j = 0; j < n; j++) {
      nll -= old[j]!;
      entropy += ent[first + j]!;
      drift += Math.abs((t.rolloutLogprobs[j] ?? old[j]!) - old[j]!);
    }
    perTrajectory[i] = { tokens: n, nllSum: nll, entropySum: entropy, driftSum: drift, loss: null };
  });
}

/** One micro-batch: loss (one policyLoss per adapter, each normalised over its own sub-batch) and backward,
 * recorded and submitted; the promise resolves once its stats are read back into perTrajectory.
 * logpOld null: logp_old is this forward's own logp (one epoch, one mini-batch). */
function microStep(
  gpu: Gpu,
  model: Qwen3Model,
  adapters: AdapterSet,
  trajs: readonly Trajectory[],
  p: Packed,
  logpOld: Map<number, Float32Array> | null,
  cfg: UpdateConfig,
  seqTotal: Map<string, number>,
  tokenTotal: Map<string, number>,
  perTrajectory: (TrajectoryStats | null)[],
): Promise<void> {
  const T = p.batch.ids.length;
  const adv = new Float32Array(p.members.length);
  p.members.forEach((i, k) => (adv[k] = trajs[i]!.advantage));
  let oldT: Tensor | null = null;
  if (logpOld) {
    const old = new Float32Array(T);
    p.members.forEach((i, k) => old.set(logpOld.get(i)!, p.responseStart[k]!));
    oldT = gpu.upload(old, [T], 'f32', 'grpo.logp_old');
  }
  const names = [...new Set(p.members.map((i) => trajs[i]!.adapter!))];
  const advT = gpu.upload(adv, [p.members.length], 'f32', 'grpo.advantages');
  const masks = names.map((name) => {
    const mask = new Float32Array(T);
    p.members.forEach((i, k) => {
      if (trajs[i]!.adapter !== name) return;
      const first = p.responseStart[k]!;
      mask.fill(1, first, first + trajs[i]!.responseIds.length);
    });
    return gpu.upload(mask, [T], 'f32', `grpo.mask.${name}`);
  });
  const results: LossResult[] = [];
  const sums: Tensor[] = [];
  const lossOpts = (name: string): PolicyLossOptions => ({ ...cfg.loss, seqTotal: seqTotal.get(name)!, tokenTotal: tokenTotal.get(name)! });
  // One policyLoss per adapter (each normalised over its own sub-batch), their gradients summed.
  const summed = (grads: { dlogp: Tensor; dentropy: Tensor | null }[]) => {
    let { dlogp, dentropy } = grads[0]!;
    for (const g of grads.slice(1)) {
      sums.push((dlogp = add(gpu, dlogp, g.dlogp)));
      if (dentropy && g.dentropy) sums.push((dentropy = add(gpu, dentropy, g.dentropy)));
    }
    return { dlogp, dentropy };
  };
  const measure = (s: TokenStats) => {
    if (!oldT) {
      oldT = gpu.tensor([T], 'f32', 'grpo.logp_old');
      gpu.copy(s.logp, oldT, T * 4);
    }
    const logpOldT = oldT;
    names.forEach((name, g) => {
      results.push(policyLoss(gpu, { logp: s.logp, logpOld: logpOldT, advantages: advT, mask: masks[g]!, seqStarts: p.batch.seqStarts, entropy: s.entropy }, lossOpts(name)));
    });
  };
  const rows = adapters.rows(p.rowAdapters);
  const opts = { adapter: rows, temperature: cfg.temperature };
  let stats: TokenStats;
  if (!logpOld && !cfg.loss.klCoef) {
    // logp_old is this forward's own logp, so the gradient is known before it: lm_head runs once.
    const ahead = names.map((name, g) => policyLossGradsAtRatioOne(gpu, { advantages: advT, mask: masks[g]!, seqStarts: p.batch.seqStarts, entropy: true }, lossOpts(name)));
    sums.push(...ahead.flatMap((a) => [a.dlogp, ...(a.dentropy ? [a.dentropy] : [])]));
    ({ stats } = lossAndGradientsAhead(model, p.batch, summed(ahead), measure, opts));
  } else {
    ({ stats } = lossAndGradients(
      model,
      p.batch,
      (s) => {
        measure(s);
        return summed(results);
      },
      opts,
    ));
  }
  rows.release();
  // The reads are started (their copies recorded and the batch submitted) before the tensors go back to the
  // pool: later commands that reuse the buffers run after the copies.
  const reads = Promise.all([
    logpOld ? null : Promise.all([gpu.readF32(stats.logp), gpu.readF32(stats.entropy)]),
    Promise.all(results.map((r) => readSeqStats(gpu, r.stats))),
  ]);
  for (const r of results) releaseLossResult(r);
  for (const t of [oldT!, advT, ...masks, ...sums, stats.logp, stats.entropy]) t.release();
  return reads.then(([old, perLoss]) => {
    if (old) recordOld(trajs, p, old[0], old[1], new Map(), perTrajectory);
    // Each sequence's stats come from the loss of its own adapter.
    p.members.forEach((i, k) => {
      const g = names.indexOf(trajs[i]!.adapter!);
      perTrajectory[i]!.loss = perLoss[g]![k]!;
    });
  });
}

/** Shared policy: each role's gradient measured alone, then summed back (grad = Σ roles). */
class RoleGradSums {
  private readonly acc: Tensor[][];

  constructor(
    private readonly gpu: Gpu,
    private readonly opts: AdamW[],
  ) {
    this.acc = opts.map((o) => o.parameters.map((p) => gpu.upload(new Float32Array(p.grad.size), p.grad.shape, 'f32', `${p.name}.grad_sum`)));
  }

  /** The norm of the gradient accumulated since the last call; moves it into the sums. */
  async takeRole(): Promise<number> {
    let sumsq = 0;
    for (let o = 0; o < this.opts.length; o++) {
      const opt = this.opts[o]!;
      const norm = await opt.gradNorm();
      sumsq += norm * norm;
      opt.parameters.forEach((p, k) => {
        const sum = add(this.gpu, this.acc[o]![k]!, p.grad);
        this.acc[o]![k]!.release();
        this.acc[o]![k] = sum;
      });
      opt.zeroGrad();
    }
    return Math.sqrt(sumsq);
  }

  /** Puts the summed gradient back where the optimizer reads it. */
  restore(): void {
    this.opts.forEach((opt, o) => {
      opt.parameters.forEach((p, k) => {
        const sum = this.acc[o]![k]!;
        this.gpu.copy(sum, p.grad, p.grad.byteLength);
        sum.release();
      });
    });
  }
}
