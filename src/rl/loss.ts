// GRPO/PPO policy loss and token NLL on the GPU (shaders/policy_loss.wgsl), verl semantics:
// ratio = exp(clamp(logp − logp_old, ±20)); pg = max(−A·ratio, −A·clip(ratio, 1−εlow, 1+εhigh));
// dual clip for A < 0: min(pg, −A·c); optional k3 KL to a reference policy and entropy bonus;
// aggregation token-mean | seq-mean-token-mean | seq-mean-token-sum | seq-mean-token-sum-norm.
// Returns the loss, d loss / d logp per token, d loss / d entropy, and per-sequence statistics
// (summarised per role on the CPU). Deterministic: fixed-order reductions, no atomics.
// The seq-mean modes count only sequences with at least one masked-in token (verl would divide by all rows).
import type { Gpu } from '../gpu/gpu.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { Uniforms } from '../gpu/uniforms.ts';
import { expectDtype, expectShape, ShapeError } from '../kernels/check.ts';
import { grid1d } from '../kernels/grid.ts';

export const LOSS_AGG_MODES = ['token-mean', 'seq-mean-token-mean', 'seq-mean-token-sum', 'seq-mean-token-sum-norm'] as const;
export type LossAggMode = (typeof LOSS_AGG_MODES)[number];

export interface PolicyLossOptions {
  clipLow?: number; // 0.2
  clipHigh?: number; // 0.28
  /** Dual-clip constant c for A < 0 (3); null turns dual clip off. */
  dualClip?: number | null;
  /** Coefficient of the k3 KL to refLogp (0; needs refLogp when > 0). */
  klCoef?: number;
  /** Coefficient of the entropy bonus (0; needs entropy when ≠ 0). */
  entropyCoef?: number;
  agg?: LossAggMode; // 'seq-mean-token-mean'
  /** The constant length seq-mean-token-sum-norm divides by (e.g. the max response length). */
  normLength?: number;
  /** For micro-batches of one mini-batch: the mini-batch's token / sequence counts to divide by, so that
   * summing the micro-batch gradients gives the mini-batch gradient. Default: this batch's counts. */
  tokenTotal?: number;
  seqTotal?: number;
}

export interface LossInputs {
  /** log-probabilities of the sampled tokens under the policy being trained, f32 [T]. */
  logp: Tensor;
  /** Which tokens count (response tokens), f32 [T] (0/1 or weights). */
  mask: Tensor;
  /** Packed sequence boundaries, u32 [S+1] (a tensor, or CPU values checked and uploaded). */
  seqStarts: Tensor | ArrayLike<number>;
  /** Per-token entropy, f32 [T]: reported per sequence, and the entropy bonus when entropyCoef ≠ 0. */
  entropy?: Tensor;
}

export interface PolicyLossInputs extends LossInputs {
  /** log-probabilities under the policy that sampled (same temperature), f32 [T]. */
  logpOld: Tensor;
  /** Advantages, f32 [T] per token or [S] per sequence (broadcast to its tokens). */
  advantages: Tensor;
  /** Reference-policy log-probabilities, f32 [T] (needed only when klCoef > 0). */
  refLogp?: Tensor;
}

export interface LossResult {
  /** f32 [1] */
  loss: Tensor;
  /** d loss / d logp, f32 [T] (0 on masked tokens). */
  dlogp: Tensor;
  /** d loss / d entropy, f32 [T], when entropy was given. */
  dentropy: Tensor | null;
  /** Per-sequence sums, f32 [S, SEQ_STAT_FIELDS.length]; see readSeqStats. */
  stats: Tensor;
}

/** Columns of the per-sequence stats tensor (sums over the sequence's tokens, weighted by the mask). */
export const SEQ_STAT_FIELDS = ['lossSum', 'tokens', 'pgSum', 'clipped', 'dualClipped', 'ratioSum', 'ppoKlSum', 'refKlSum', 'entropySum'] as const;
export type SeqStats = Record<(typeof SEQ_STAT_FIELDS)[number], number>;

export class LossError extends Error {
  override name = 'LossError';
}

const KERNEL = 'policy_loss';

function seqStartsTensor(gpu: Gpu, seqStarts: Tensor | ArrayLike<number>, T: number): Tensor {
  if (!Array.isArray(seqStarts) && !ArrayBuffer.isView(seqStarts) && 'buffer' in seqStarts) {
    expectDtype(KERNEL, seqStarts, 'u32');
    if (seqStarts.shape.length !== 1 || seqStarts.size < 2) throw new ShapeError(`${KERNEL}: ${seqStarts.label} must be u32 [S+1] with S >= 1, got [${seqStarts.shape}]`);
    return seqStarts;
  }
  const v = Array.from(seqStarts as ArrayLike<number>);
  if (v.length < 2 || v[0] !== 0 || v[v.length - 1] !== T || v.some((x, i) => !Number.isInteger(x) || (i > 0 && x < v[i - 1]!))) {
    throw new LossError(`${KERNEL}: seqStarts must rise from 0 to T=${T} (S >= 1 sequences), got [${v.slice(0, 8)}${v.length > 8 ? ',…' : ''}]`);
  }
  return gpu.upload(new Uint32Array(v), [v.length], 'u32', 'policy_loss.seqStarts');
}

function checkTokens(t: Tensor, T: number): void {
  expectDtype(KERNEL, t, 'f32');
  expectShape(KERNEL, t, [T]);
}

interface Resolved {
  objective: 0 | 1;
  logp: Tensor;
  logpOld: Tensor | null;
  advantages: Tensor | null;
  mask: Tensor;
  seqStarts: Tensor | ArrayLike<number>;
  refLogp: Tensor | null;
  entropy: Tensor | null;
}

function run(gpu: Gpu, r: Resolved, o: PolicyLossOptions): LossResult {
  const T = r.logp.size;
  for (const t of [r.logp, r.mask, r.logpOld, r.refLogp, r.entropy]) if (t) checkTokens(t, T);
  const starts = seqStartsTensor(gpu, r.seqStarts, T);
  const S = starts.size - 1;
  let advPerSeq = 0;
  if (r.advantages) {
    expectDtype(KERNEL, r.advantages, 'f32');
    if (r.advantages.size === T && r.advantages.shape.length === 1) advPerSeq = 0;
    else if (r.advantages.size === S) advPerSeq = 1;
    else throw new ShapeError(`${KERNEL}: ${r.advantages.label} has ${r.advantages.size} elements, expected T=${T} (per token) or S=${S} (per sequence)`);
  }
  const clipLow = o.clipLow ?? 0.2;
  const clipHigh = o.clipHigh ?? 0.28;
  const dualClip = o.dualClip === undefined ? 3 : o.dualClip;
  const klCoef = o.klCoef ?? 0;
  const entropyCoef = o.entropyCoef ?? 0;
  const agg = o.agg ?? 'seq-mean-token-mean';
  const aggIndex = LOSS_AGG_MODES.indexOf(agg);
  if (aggIndex < 0) throw new LossError(`${KERNEL}: unknown aggregation mode ${agg} (one of ${LOSS_AGG_MODES.join(', ')})`);
  if (!(clipLow >= 0 && clipLow < 1 && clipHigh >= 0)) throw new LossError(`${KERNEL}: clip range (1 − ${clipLow}, 1 + ${clipHigh}) is invalid`);
  if (dualClip !== null && !(dualClip > 1)) throw new LossError(`${KERNEL}: dual-clip constant must be > 1, got ${dualClip}`);
  if (klCoef !== 0 && !r.refLogp) throw new LossError(`${KERNEL}: klCoef ${klCoef} needs refLogp`);
  if (entropyCoef !== 0 && !r.entropy) throw new LossError(`${KERNEL}: entropyCoef ${entropyCoef} needs entropy`);
  const normLength = o.normLength ?? 0;
  if (agg === 'seq-mean-token-sum-norm' && !(normLength > 0)) throw new LossError(`${KERNEL}: ${agg} needs normLength > 0 (the constant length to divide by)`);
  for (const [k, v] of [['tokenTotal', o.tokenTotal], ['seqTotal', o.seqTotal]] as const) {
    if (v !== undefined && !(v > 0)) throw new LossError(`${KERNEL}: ${k} must be > 0, got ${v}`);
  }

  const uniforms = new Uniforms()
    .u32(S)
    .u32(r.objective)
    .u32(advPerSeq)
    .u32(r.refLogp ? 1 : 0)
    .u32(r.entropy ? 1 : 0)
    .u32(dualClip === null ? 0 : 1)
    .u32(aggIndex)
    .u32(0)
    .f32(clipLow)
    .f32(clipHigh)
    .f32(dualClip ?? 0)
    .f32(klCoef)
    .f32(entropyCoef)
    .f32(normLength || 1)
    .f32(o.tokenTotal ?? 0)
    .f32(o.seqTotal ?? 0);
  const dlogp = gpu.tensor([T], 'f32', 'policy_loss.dlogp');
  const dentropy = r.entropy ? gpu.tensor([T], 'f32', 'policy_loss.dentropy') : null;
  const stats = gpu.tensor([S, SEQ_STAT_FIELDS.length], 'f32', 'policy_loss.stats');
  const seqWeight = gpu.tensor([S], 'f32', 'policy_loss.seqWeight');
  const loss = gpu.tensor([1], 'f32', 'policy_loss.loss');
  // Absent optional inputs: the entry points still declare them, so bind a read-only stand-in.
  const stand = r.logp;
  const common = { shader: KERNEL, uniforms };
  gpu.dispatch({
    ...common,
    entry: 'token_terms',
    bindings: [r.logp, r.logpOld ?? stand, r.advantages ?? stand, r.mask, starts, r.refLogp ?? stand, r.entropy ?? stand, dlogp, null, stats, null, null],
    workgroups: grid1d(S),
    label: 'policy_loss.token_terms',
  });
  gpu.dispatch({ ...common, entry: 'aggregate', bindings: [null, null, null, null, null, null, null, null, null, stats, seqWeight, loss], workgroups: [1], label: 'policy_loss.aggregate' });
  const dentropyScratch = dentropy ?? gpu.tensor([1], 'f32', 'policy_loss.noEntropy');
  gpu.dispatch({
    ...common,
    entry: 'token_grads',
    bindings: [null, null, null, r.mask, starts, null, null, dlogp, dentropyScratch, null, seqWeight, null],
    workgroups: grid1d(S),
    label: 'policy_loss.token_grads',
  });
  // Released buffers return to the pool only for later allocations; the recorded dispatches keep them alive.
  seqWeight.release();
  if (!dentropy) dentropyScratch.release();
  if (starts !== r.seqStarts) starts.release();
  return { loss, dlogp, dentropy, stats };
}

/** The clipped policy-gradient loss (GRPO/PPO, verl semantics). */
export function policyLoss(gpu: Gpu, inputs: PolicyLossInputs, opts: PolicyLossOptions = {}): LossResult {
  return run(
    gpu,
    {
      objective: 0,
      logp: inputs.logp,
      logpOld: inputs.logpOld,
      advantages: inputs.advantages,
      mask: inputs.mask,
      seqStarts: inputs.seqStarts,
      refLogp: inputs.refLogp ?? null,
      entropy: inputs.entropy ?? null,
    },
    opts,
  );
}

/** d loss / d logp and d loss / d entropy before logp is known: where they do not depend on it (the policy loss at
 * ratio 1, the NLL), the mask stands in for logp, logp_old and entropy, and the kernel gives the gradients bit for
 * bit (it sees logp − logp_old = 0, as at the real numbers, and the gradient never reads the entropy). */
function gradsAhead(gpu: Gpu, r: Resolved, opts: PolicyLossOptions): KnownGrads {
  const res = run(gpu, r, opts);
  res.loss.release();
  res.stats.release();
  return { dlogp: res.dlogp, dentropy: res.dentropy };
}

/** Gradients of a loss known before the forward (lossAndGradientsAhead); the caller releases them. */
export interface KnownGrads {
  dlogp: Tensor;
  dentropy: Tensor | null;
}

/** policyLoss's gradients where logp = logp_old (a first pass over the batch: the ratio is exactly 1), before logp is
 * known. A KL term's gradient depends on logp, so klCoef must be 0. `entropy`: whether the loss will see entropy
 * (then dentropy is returned). */
export function policyLossGradsAtRatioOne(gpu: Gpu, inputs: Omit<PolicyLossInputs, 'logp' | 'logpOld' | 'refLogp' | 'entropy'> & { entropy: boolean }, opts: PolicyLossOptions = {}): KnownGrads {
  if ((opts.klCoef ?? 0) !== 0) throw new LossError(`${KERNEL}: with klCoef ${opts.klCoef} the gradient depends on logp; it cannot be known before the forward`);
  const m = inputs.mask;
  return gradsAhead(gpu, { objective: 0, logp: m, logpOld: m, advantages: inputs.advantages, mask: m, seqStarts: inputs.seqStarts, refLogp: null, entropy: inputs.entropy ? m : null }, opts);
}

/** nllLoss's gradients before logp is known (d loss / d logp is −weight·mask whatever logp is). */
export function nllLossGrads(gpu: Gpu, inputs: Omit<LossInputs, 'logp' | 'entropy'> & { entropy: boolean }, opts: NllOptions = {}): KnownGrads {
  const m = inputs.mask;
  return gradsAhead(gpu, { objective: 1, logp: m, logpOld: null, advantages: null, mask: m, seqStarts: inputs.seqStarts, refLogp: null, entropy: inputs.entropy ? m : null }, { agg: 'token-mean', ...opts });
}

export type NllOptions = Pick<PolicyLossOptions, 'agg' | 'normLength' | 'tokenTotal' | 'seqTotal' | 'entropyCoef'>;

/** Token NLL (SFT): ℓ = −logp on masked tokens, aggregated like the policy loss. */
export function nllLoss(
  gpu: Gpu,
  inputs: LossInputs,
  opts: NllOptions = {},
): LossResult {
  return run(
    gpu,
    { objective: 1, logp: inputs.logp, logpOld: null, advantages: null, mask: inputs.mask, seqStarts: inputs.seqStarts, refLogp: null, entropy: inputs.entropy ?? null },
    { agg: 'token-mean', ...opts },
  );
}

export function releaseLossResult(r: LossResult): void {
  for (const t of [r.loss, r.dlogp, r.dentropy, r.stats]) t?.release();
}

/** Reads the per-sequence stats tensor back (one read). */
export async function readSeqStats(gpu: Gpu, stats: Tensor): Promise<SeqStats[]> {
  const K = SEQ_STAT_FIELDS.length;
  if (stats.shape.length !== 2 || stats.shape[1] !== K) throw new ShapeError(`readSeqStats: ${stats.label} has shape [${stats.shape}], expected [S, ${K}]`);
  const v = await gpu.readF32(stats);
  const out: SeqStats[] = [];
  for (let s = 0; s < stats.shape[0]!; s++) {
    const row = {} as SeqStats;
    SEQ_STAT_FIELDS.forEach((f, k) => (row[f] = v[s * K + k]!));
    out.push(row);
  }
  return out;
}

/** Token-weighted means over the sequences of one role. */
export interface RoleLossStats {
  sequences: number;
  tokens: number;
  /** mean per-token loss ℓ (pg + KL − entropy bonus) */
  loss: number;
  pg: number;
  /** fraction of tokens where the clip bound was active (verl pg_clipfrac) */
  clipFrac: number;
  /** fraction of tokens cut by the dual clip (verl pg_clipfrac_lower) */
  dualClipFrac: number;
  ratioMean: number;
  /** mean logp_old − logp (verl ppo_kl) */
  ppoKl: number;
  refKl: number;
  entropy: number;
}

/** Summarises per-sequence stats by role label (one label per sequence). */
export function summarizeByRole(stats: readonly SeqStats[], roles: readonly string[]): Record<string, RoleLossStats> {
  if (roles.length !== stats.length) throw new LossError(`summarizeByRole: ${roles.length} role labels for ${stats.length} sequences`);
  const sums = new Map<string, SeqStats & { sequences: number }>();
  stats.forEach((st, i) => {
    const role = roles[i]!;
    let acc = sums.get(role);
    if (!acc) {
      acc = { sequences: 0 } as SeqStats & { sequences: number };
      for (const f of SEQ_STAT_FIELDS) acc[f] = 0;
      sums.set(role, acc);
    }
    acc.sequences++;
    for (const f of SEQ_STAT_FIELDS) acc[f] += st[f];
  });
  const out: Record<string, RoleLossStats> = {};
  for (const [role, a] of sums) {
    const per = (x: number) => (a.tokens > 0 ? x / a.tokens : 0);
    out[role] = {
      sequences: a.sequences,
      tokens: a.tokens,
      loss: per(a.lossSum),
      pg: per(a.pgSum),
      clipFrac: per(a.clipped),
      dualClipFrac: per(a.dualClipped),
      ratioMean: per(a.ratioSum),
      ppoKl: per(a.ppoKlSum),
      refKl: per(a.refKlSum),
      entropy: per(a.entropySum),
    };
  }
  return out;
}
