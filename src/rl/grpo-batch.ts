// GRPO batches as JSONL (`troupe grad --loss grpo`, reference fixtures): one line per sequence
// {"prompt":[ids],"response":[ids],"logp_old":[one per response token],"advantage":x} (and "adapter" when
// the caller names adapters), every field checked (errors name the file, the line and the field); packed
// into one next-token batch whose mask covers the response tokens; the clipped policy loss (src/rl/loss.ts)
// and its gradients through the model (src/model/backward.ts), with clip fractions as verl reports them.
import type { Gpu } from '../gpu/gpu.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { logprobs } from '../kernels/logprobs.ts';
import { matmul } from '../kernels/matmul.ts';
import { type BackwardOptions, defaultChunkRows, lossAndGradients, nextTokenBatch, type TrainBatch } from '../model/backward.ts';
import type { Qwen3Model } from '../model/qwen3.ts';
import { firstBadId } from '../model/token-ids.ts';
import { type PolicyLossOptions, policyLoss, readSeqStats, releaseLossResult, type SeqStats } from './loss.ts';

export class GrpoBatchError extends Error {
  override name = 'GrpoBatchError';
}

export interface GrpoSequence {
  prompt: number[];
  response: number[];
  /** log-probability of each response token under the sampling policy (same temperature). */
  logpOld: number[];
  advantage: number;
  /** The adapter the sequence trains (null: the base model); only when the parser was given adapter names. */
  adapter?: string | null;
}

export interface ParseGrpoOptions {
  vocabSize: number;
  /** Most prompt + response tokens of one line (max_position_embeddings). */
  maxTokens?: number;
  /** For messages (default "batch"). */
  file?: string;
  /** Adapter names a line's "adapter" field may take; without it the field is refused. */
  adapters?: readonly string[];
}

const FIELDS = ['prompt', 'response', 'logp_old', 'advantage'];

/** Parses and checks a GRPO batch in JSONL; blank lines are skipped. */
export function parseGrpoBatch(text: string, o: ParseGrpoOptions): GrpoSequence[] {
  const file = o.file ?? 'batch';
  const out: GrpoSequence[] = [];
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (!line) return;
    const where = `${file} line ${i + 1}`;
    let v: unknown;
    try {
      v = JSON.parse(line);
    } catch (e) {
      throw new GrpoBatchError(`${where}: not valid JSON (${(e as Error).message})`);
    }
    if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new GrpoBatchError(`${where}: expected a JSON object with ${FIELDS.join(', ')}`);
    const rec = v as Record<string, unknown>;
    const allowed = o.adapters ? [...FIELDS, 'adapter'] : FIELDS;
    for (const k of Object.keys(rec)) if (!allowed.includes(k)) throw new GrpoBatchError(`${where}: unknown field "${k}" (expected ${allowed.join(', ')})`);
    for (const k of FIELDS) if (!(k in rec)) throw new GrpoBatchError(`${where}: missing field "${k}"`);
    const ids = (k: 'prompt' | 'response'): number[] => {
      const a = rec[k];
      if (!Array.isArray(a) || !a.length) throw new GrpoBatchError(`${where}: "${k}" must be a non-empty list of token ids`);
      const bad = firstBadId(a as number[], o.vocabSize);
      if (bad >= 0) throw new GrpoBatchError(`${where}: "${k}"[${bad}] = ${JSON.stringify(a[bad])} is not a token id (an integer in [0, ${o.vocabSize}))`);
      return a as number[];
    };
    const prompt = ids('prompt');
    const response = ids('response');
    if (o.maxTokens !== undefined && prompt.length + response.length > o.maxTokens) {
      throw new GrpoBatchError(`${where}: ${prompt.length} prompt + ${response.length} response tokens exceed max_position_embeddings ${o.maxTokens}`);
    }
    const lp = rec.logp_old;
    if (!Array.isArray(lp)) throw new GrpoBatchError(`${where}: "logp_old" must be a list of numbers, one per response token`);
    if (lp.length !== response.length) throw new GrpoBatchError(`${where}: "logp_old" has ${lp.length} values, "response" has ${response.length} tokens`);
    const badLp = lp.findIndex((x) => typeof x !== 'number' || !Number.isFinite(x) || x > 0);
    if (badLp >= 0) throw new GrpoBatchError(`${where}: "logp_old"[${badLp}] = ${JSON.stringify(lp[badLp])} is not a finite log-probability (a number <= 0)`);
    const adv = rec.advantage;
    if (typeof adv !== 'number' || !Number.isFinite(adv)) throw new GrpoBatchError(`${where}: "advantage" = ${JSON.stringify(adv)} is not a finite number`);
    const seq: GrpoSequence = { prompt, response, logpOld: lp as number[], advantage: adv };
    if (o.adapters) {
      const a = rec.adapter ?? null;
      if (a !== null && (typeof a !== 'string' || !o.adapters.includes(a))) throw new GrpoBatchError(`${where}: "adapter" = ${JSON.stringify(a)} is not one of ${o.adapters.join(', ')} (or null)`);
      seq.adapter = a as string | null;
    }
    out.push(seq);
  });
  if (!out.length) throw new GrpoBatchError(`${file}: no sequences`);
  return out;
}

export interface PackedGrpoBatch {
  batch: TrainBatch;
  /** 1 on the positions that predict a response token, f32 [T]. */
  mask: Float32Array;
  seqStarts: Uint32Array;
  /** logp_old at the masked positions (0 elsewhere), f32 [T]. */
  logpOld: Float32Array;
  /** One per sequence, f32 [S]. */
  advantages: Float32Array;
  /** Each position's adapter (the sequence's; null: base model), for AdapterSet.rows. */
  rowAdapters: (string | null)[];
  /** The longest response: verl's mask width, what seq-mean-token-sum-norm divides by. */
  maxResponse: number;
}

/** Packs sequences prompt + response: position P−1+i of a sequence predicts response token i. */
export function packGrpoBatch(seqs: readonly GrpoSequence[]): PackedGrpoBatch {
  const b = nextTokenBatch(seqs.map((s) => [...s.prompt, ...s.response]));
  const T = b.ids.length;
  const mask = new Float32Array(T);
  const logpOld = new Float32Array(T);
  const rowAdapters: (string | null)[] = [];
  seqs.forEach((s, k) => {
    const first = b.seqStarts[k]! + s.prompt.length - 1;
    s.response.forEach((_, i) => {
      mask[first + i] = 1;
      logpOld[first + i] = s.logpOld[i]!;
    });
    for (let t = 0; t < s.prompt.length + s.response.length; t++) rowAdapters.push(s.adapter ?? null);
  });
  return {
    batch: { ids: b.ids, seqLens: b.seqLens, targets: b.targets },
    mask,
    seqStarts: b.seqStarts,
    logpOld,
    advantages: Float32Array.from(seqs, (s) => s.advantage),
    rowAdapters,
    maxResponse: Math.max(...seqs.map((s) => s.response.length)),
  };
}

/** log softmax(logits / T)[target] of every position under the base model (no adapter): the KL reference. */
export function baseLogprobs(model: Qwen3Model, batch: TrainBatch, temperature: number, chunkRows = defaultChunkRows(model.gpu, model.config)): Tensor {
  const gpu = model.gpu;
  const T = batch.ids.length;
  const hidden = model.forward({ ids: batch.ids, seqLens: batch.seqLens }, { hiddenOnly: true });
  const targets = gpu.upload(batch.targets, [T], 'u32', 'ref.targets');
  const H = hidden.shape[1]!;
  const out = { logp: gpu.tensor([T], 'f32', 'ref.logp'), entropy: gpu.tensor([T], 'f32', 'ref.entropy'), lse: gpu.tensor([T], 'f32', 'ref.lse') };
  for (let r0 = 0; r0 < T; r0 += chunkRows) {
    const n = Math.min(chunkRows, T - r0);
    const h = gpu.tensor([n, H], 'f32', 'ref.hidden.rows');
    gpu.copy(hidden, h, n * H * 4, r0 * H * 4, 0);
    const logits = matmul(gpu, h, model.weights.lmHead, { transB: true, label: 'ref.lm_head' });
    logprobs(gpu, logits, targets, { temperature, rowOffset: r0, out });
    logits.release();
    h.release();
  }
  for (const t of [hidden, targets, out.entropy, out.lse]) t.release();
  return out.logp;
}

export interface GrpoGradOptions extends Omit<PolicyLossOptions, 'normLength'> {
  /** Softmax temperature of logp (the sampling temperature; default 1). */
  temperature?: number;
  /** For seq-mean-token-sum-norm (default: the longest response, as verl's mask width). */
  normLength?: number;
}

export interface GrpoGradResult {
  loss: number;
  /** Tokens where the clipped term won (verl pg_clipfrac). */
  clipFrac: number;
  /** Tokens with A < 0 where the dual-clip bound won (verl pg_clipfrac_lower). */
  clipFracLower: number;
  stats: SeqStats[];
  /** Policy logp of every position (temperature applied), f32 [T]. */
  logp: Float32Array;
}

/** The GRPO policy loss of a packed batch and its gradients, added into grads.adapter's dA/dB (or
 * grads.fullGrads); the KL reference (klCoef > 0) is the base model without adapter. */
export async function grpoGradients(
  model: Qwen3Model,
  p: PackedGrpoBatch,
  grads: Pick<BackwardOptions, 'adapter' | 'fullGrads' | 'chunkRows'>,
  o: GrpoGradOptions = {},
): Promise<GrpoGradResult> {
  const gpu: Gpu = model.gpu;
  const T = p.batch.ids.length;
  const temperature = o.temperature ?? 1;
  if (!(temperature > 0)) throw new GrpoBatchError(`grpo: temperature must be > 0, got ${temperature}`);
  const f32 = (v: Float32Array, name: string) => gpu.upload(v, [v.length], 'f32', `grpo.${name}`);
  const mask = f32(p.mask, 'mask');
  const logpOld = f32(p.logpOld, 'logp_old');
  const advantages = f32(p.advantages, 'advantages');
  const refLogp = (o.klCoef ?? 0) !== 0 ? baseLogprobs(model, p.batch, temperature) : undefined;
  const useEntropy = (o.entropyCoef ?? 0) !== 0;
  const { result, stats } = lossAndGradients(
    model,
    p.batch,
    (s) =>
      policyLoss(
        gpu,
        { logp: s.logp, logpOld, advantages, mask, seqStarts: p.seqStarts, refLogp, entropy: useEntropy ? s.entropy : undefined },
        { ...o, normLength: o.normLength ?? p.maxResponse },
      ),
    { ...grads, temperature },
  );
  const [lossV, seqStats, logp] = await Promise.all([gpu.readF32(result.loss), readSeqStats(gpu, result.stats), gpu.readF32(stats.logp)]);
  releaseLossResult(result);
  for (const t of [stats.logp, stats.entropy, mask, logpOld, advantages, refLogp]) t?.release();
  const tokens = seqStats.reduce((a, s) => a + s.tokens, 0);
  const frac = (k: 'clipped' | 'dualClipped') => (tokens > 0 ? seqStats.reduce((a, s) => a + s[k], 0) / tokens : 0);
  if (logp.length !== T) throw new GrpoBatchError(`grpo: ${logp.length} logp values for ${T} positions`);
  return { loss: lossV[0]!, clipFrac: frac('clipped'), clipFracLower: frac('dualClipped'), stats: seqStats, logp };
}
