// Loss and gradients through Qwen3, layer by layer in reverse, with per-layer recomputation:
// the forward keeps only each layer's input; the backward re-runs one layer with every
// intermediate saved, takes its gradient, and frees it before the next. Token log-probabilities
// (and entropy) come from the fused log-softmax over the full vocabulary in row chunks, twice: once
// to get logp for the loss, once more to turn d loss / d logp into d hidden — so no [T, vocab]
// gradient for the whole batch is ever held. A loss whose d loss / d logp is known before the forward
// (lossAndGradientsAhead) takes both from one pass.
// Gradients go to a TrainableLinearAdapter (one LoRA adapter, or per-row adapters: AdapterSet.rows) and, in
// full-parameter mode, to one f32 gradient per base weight (accumulated: call repeatedly for
// micro-batches, then step the optimizer).
import { checkTokenIds, U32_LIMIT } from './token-ids.ts';
import type { Gpu } from '../gpu/gpu.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { attentionBackward } from '../kernels/attention.ts';
import { add } from '../kernels/elementwise.ts';
import { embeddingBackward } from '../kernels/embedding.ts';
import { logprobs, logprobsBackward } from '../kernels/logprobs.ts';
import { matmul, prefersTensorCores } from '../kernels/matmul.ts';
import { rmsnorm, rmsnormBackward } from '../kernels/rmsnorm.ts';
import { ropeBackward } from '../kernels/rope.ts';
import { swigluBackward } from '../kernels/swiglu.ts';
import type { LinearModule } from './adapter.ts';
import type { Qwen3Config } from './config.ts';
import type { TrainableLinearAdapter } from './lora.ts';
import { type AttentionKept, type LayerContext, type LayerSaved, ModelInputError, type Qwen3Model, releaseLayerSaved } from './qwen3.ts';

export interface TrainBatch {
  /** Token ids of all sequences, packed [T]. */
  ids: Uint32Array;
  seqLens: number[];
  /** The token each position predicts (usually the next id of its sequence), u32 [T]. Positions that
   * predict nothing (a sequence's last) still need a valid id: the loss masks them out. */
  targets: Uint32Array;
}

/** Packs sequences for next-token prediction: position t of a sequence predicts its token t+1; each
 * sequence's last position predicts nothing (mask 0, target 0). mask f32 [T] and seqStarts [S+1] are
 * what nllLoss / policyLoss take. */
export function nextTokenBatch(seqs: readonly (readonly number[])[], vocab = U32_LIMIT): TrainBatch & { mask: Float32Array; seqStarts: Uint32Array } {
  if (!seqs.length || seqs.some((s) => s.length < 1)) throw new ModelInputError('nextTokenBatch: every sequence needs at least one token');
  // Before the u32 cast, which would wrap 2^32 to 0 (the model checks ids < vocab on the u32 values).
  seqs.forEach((s, i) => checkTokenIds(`nextTokenBatch: sequence ${i}`, s, vocab));
  const ids = Uint32Array.from(seqs.flat());
  const targets = new Uint32Array(ids.length);
  const mask = new Float32Array(ids.length);
  const seqStarts = new Uint32Array(seqs.length + 1);
  let o = 0;
  seqs.forEach((s, i) => {
    for (let t = 0; t + 1 < s.length; t++) {
      targets[o + t] = s[t + 1]!;
      mask[o + t] = 1;
    }
    o += s.length;
    seqStarts[i + 1] = o;
  });
  return { ids, targets, seqLens: seqs.map((s) => s.length), mask, seqStarts };
}

export interface TokenStats {
  /** log softmax(logits / T)[target] per position, f32 [T]. */
  logp: Tensor;
  /** Entropy of softmax(logits / T) per position, f32 [T]. */
  entropy: Tensor;
}

/** What a loss returns: d loss / d logp (and optionally / d entropy), f32 [T]. */
export interface TokenGrads {
  dlogp: Tensor;
  dentropy?: Tensor | null;
}

export interface BackwardOptions {
  /** Where LoRA gradients accumulate (the adapters' dA/dB). */
  adapter?: TrainableLinearAdapter;
  /** Full-parameter mode: the gradient tensor (f32, accumulated) of each base weight tensor. */
  fullGrads?: Map<Tensor, Tensor>;
  /** Softmax temperature of the log-probabilities (GRPO uses the sampling temperature). */
  temperature?: number;
  /** Rows of logits at a time (default: defaultChunkRows). */
  chunkRows?: number;
  /** Recompute each layer in the backward (default true); false keeps every activation. */
  recompute?: boolean;
  /** With recomputation, keep each layer's attention output and lse from the forward so that attention runs once a
   * step (default true: on the H200 it was 17% of an 8x1024 LoRA step, run twice; the cost is T x nHeads x hd
   * f32 a layer, 1.8 GiB for Qwen3-0.6B at 8192 tokens). */
  keepAttention?: boolean;
}

export class BackwardError extends Error {
  override name = 'BackwardError';
}

/** Runs forward, the loss (on logp/entropy) and backward. Returns the loss function's result and the
 * token stats (the caller releases both). Gradients are added into the adapter / fullGrads. */
export function lossAndGradients<R extends TokenGrads>(model: Qwen3Model, batch: TrainBatch, lossFn: (s: TokenStats) => R, opts: BackwardOptions = {}): { result: R; stats: TokenStats } {
  return trainStep(model, batch, 'lossAndGradients', opts, (tape, hidden, targets) => {
    const stats = tape.tokenStats(hidden, targets);
    const result = lossFn({ logp: stats.logp, entropy: stats.entropy });
    const dHidden = tape.hiddenGrad(hidden, targets, stats, result);
    return { result, stats, dHidden };
  });
}

/** lossAndGradients for a loss whose d loss / d logp (and d entropy) are known before the forward, because they do
 * not depend on its numbers (GRPO's first pass over a batch: the ratio π/π_old is exactly 1). Each chunk of logits
 * then gives its token stats and d hidden in one pass, so lm_head's product runs once instead of twice. `measure`
 * runs on the stats afterwards (the loss's value and statistics); its result is returned as it is. */
export function lossAndGradientsAhead<R>(model: Qwen3Model, batch: TrainBatch, grads: TokenGrads, measure: (s: TokenStats) => R, opts: BackwardOptions = {}): { result: R; stats: TokenStats } {
  return trainStep(model, batch, 'lossAndGradientsAhead', opts, (tape, hidden, targets) => {
    const { dHidden, ...stats } = tape.statsAndHiddenGrad(hidden, targets, grads);
    return { result: measure({ logp: stats.logp, entropy: stats.entropy }), stats, dHidden };
  });
}

/** What the output head gives the backward: the loss's result, the token stats (lse is released here) and d hidden. */
type Head<R> = (tape: Tape, hidden: Tensor, targets: Tensor) => { result: R; stats: TokenStats & { lse: Tensor }; dHidden: Tensor };

function trainStep<R>(model: Qwen3Model, batch: TrainBatch, name: string, opts: BackwardOptions, head: Head<R>): { result: R; stats: TokenStats } {
  const { gpu, config: c } = model;
  const T = batch.ids.length;
  if (batch.targets.length !== T) throw new ModelInputError(`${name}: ${batch.targets.length} targets for ${T} tokens`);
  const bad = batch.targets.find((t) => t >= c.vocabSize);
  if (bad !== undefined) throw new ModelInputError(`${name}: target id ${bad} outside the vocabulary [0, ${c.vocabSize})`);
  const recompute = opts.recompute ?? true;
  const ctx = model.context({ ids: batch.ids, seqLens: batch.seqLens }, opts.adapter);
  const tape = new Tape(model, ctx, opts);

  // Forward, keeping each layer's input (and, without recomputation, everything).
  const inputs: Tensor[] = [];
  const saved: Partial<LayerSaved>[] = [];
  const kept: AttentionKept[] = [];
  const keepAttention = recompute && (opts.keepAttention ?? true);
  let x = model.embed(batch.ids);
  for (let i = 0; i < c.numLayers; i++) {
    inputs.push(x);
    const s: Partial<LayerSaved> | undefined = recompute ? undefined : {};
    const keep: AttentionKept | undefined = keepAttention ? {} : undefined;
    x = model.layerForward(i, x, ctx, s, keep);
    if (s) saved.push(s);
    if (keep) kept.push(keep);
  }
  const norm = rmsnorm(gpu, x, model.weights.norm, c.rmsNormEps);
  const hidden = norm.y;

  // Loss on logp / entropy, and d hidden from d logp chunk by chunk.
  const targets = gpu.upload(batch.targets, [T], 'u32', 'targets');
  const { result, stats, dHidden } = head(tape, hidden, targets);
  targets.release();
  stats.lse.release();

  let dx = rmsnormBackward(gpu, x, model.weights.norm, norm.rstd, dHidden, tape.normGrad(model.weights.norm)).dx;
  for (const t of [dHidden, hidden, norm.rstd, x]) t.release();

  for (let i = c.numLayers - 1; i >= 0; i--) {
    let s: Partial<LayerSaved>;
    if (recompute) {
      s = { ...kept[i] };
      model.layerForward(i, inputs[i]!, ctx, s).release();
    } else {
      s = saved[i]!;
    }
    const dIn = tape.layerBackward(i, s as LayerSaved, dx);
    dx.release();
    dx = dIn;
    releaseLayerSaved(s as LayerSaved);
  }
  const embedGrad = opts.fullGrads?.get(model.weights.embed);
  if (embedGrad) embeddingBackward(gpu, dx, batch.ids, embedGrad);
  dx.release();
  model.releaseContext(ctx);
  return { result, stats: { logp: stats.logp, entropy: stats.entropy } };
}

/** The token stats lossAndGradients computes for the same batch and options, without a backward: the
 * same kernels in the same order, so the numbers are bit-identical (GRPO's logp_old comes from here and
 * the step-0 ratio π/π_old is exactly 1). The caller releases both tensors. */
export function tokenLogprobs(model: Qwen3Model, batch: TrainBatch, opts: Pick<BackwardOptions, 'adapter' | 'temperature' | 'chunkRows'> = {}): TokenStats {
  const { gpu, config: c } = model;
  const T = batch.ids.length;
  if (batch.targets.length !== T) throw new ModelInputError(`tokenLogprobs: ${batch.targets.length} targets for ${T} tokens`);
  const bad = batch.targets.find((t) => t >= c.vocabSize);
  if (bad !== undefined) throw new ModelInputError(`tokenLogprobs: target id ${bad} outside the vocabulary [0, ${c.vocabSize})`);
  const ctx = model.context({ ids: batch.ids, seqLens: batch.seqLens }, opts.adapter);
  const tape = new Tape(model, ctx, opts);
  let x = model.embed(batch.ids);
  for (let i = 0; i < c.numLayers; i++) {
    const next = model.layerForward(i, x, ctx);
    x.release();
    x = next;
  }
  const norm = rmsnorm(gpu, x, model.weights.norm, c.rmsNormEps);
  const targets = gpu.upload(batch.targets, [T], 'u32', 'targets');
  const stats = tape.tokenStats(norm.y, targets);
  for (const t of [targets, stats.lse, norm.y, norm.rstd, x]) t.release();
  model.releaseContext(ctx);
  return { logp: stats.logp, entropy: stats.entropy };
}

/** Rows of logits per lm_head chunk when the caller does not say: 2048 where the chunk's logits fit one binding and
 * either tensor cores take lm_head's product at that many rows (H200, 2026-12-02: the 8x1024 LoRA step 1.22x faster
 * than with 128 rows, peak memory 5.3 GiB instead of 4.1) or a headless runtime drives a real GPU (Deno/wgpu on the
 * H200, 2026-12-03: 2760 against 2500 tokens/s, peak 6.96 instead of 5.77 GiB); else 128 (Qwen3's 128 x 151936 f32
 * logits are 78 MB, within WebGPU's default 128 MiB binding): a browser tab shares its GPU with the page, and the CPU
 * drivers gain nothing from larger products. */
export function defaultChunkRows(gpu: Gpu, c: Pick<Qwen3Config, 'vocabSize' | 'hiddenSize'>): number {
  const rows = 2048;
  if (rows * c.vocabSize * 4 > gpu.limits.maxStorageBufferBindingSize) return 128;
  const headlessGpu = gpu.report.runtime !== 'browser' && gpu.report.cpuDriver === null;
  return headlessGpu || prefersTensorCores(gpu, { M: rows, N: c.vocabSize, K: c.hiddenSize, transA: false, transB: true }) ? rows : 128;
}

/** The backward pieces of one forward: shares its context, adapter and gradient targets. */
class Tape {
  private readonly gpu: Gpu;
  private readonly chunk: number;
  private readonly temperature: number;

  constructor(
    private readonly model: Qwen3Model,
    private readonly ctx: LayerContext,
    private readonly opts: BackwardOptions,
  ) {
    this.gpu = model.gpu;
    this.chunk = opts.chunkRows ?? defaultChunkRows(model.gpu, model.config);
    this.temperature = opts.temperature ?? 1;
    if (!Number.isInteger(this.chunk) || this.chunk < 1) throw new BackwardError(`chunkRows must be a positive integer, got ${this.chunk}`);
  }

  private rows(t: Tensor, r0: number, n: number): Tensor {
    const w = t.shape[1]!;
    if (r0 === 0 && n === t.shape[0]) return t;
    const out = this.gpu.tensor([n, w], t.dtype, `${t.label}.rows`);
    this.gpu.copy(t, out, n * w * 4, r0 * w * 4, 0);
    return out;
  }

  private forChunks(T: number, fn: (r0: number, n: number) => void): void {
    for (let r0 = 0; r0 < T; r0 += this.chunk) fn(r0, Math.min(this.chunk, T - r0));
  }

  private chunkLogits(hidden: Tensor, r0: number, n: number): { h: Tensor; logits: Tensor } {
    const h = this.rows(hidden, r0, n);
    return { h, logits: matmul(this.gpu, h, this.model.weights.lmHead, { transB: true, label: 'lm_head' }) };
  }

  private statsTensors(T: number): TokenStats & { lse: Tensor } {
    return { logp: this.gpu.tensor([T], 'f32', 'logp'), entropy: this.gpu.tensor([T], 'f32', 'entropy'), lse: this.gpu.tensor([T], 'f32', 'lse') };
  }

  tokenStats(hidden: Tensor, targets: Tensor): TokenStats & { lse: Tensor } {
    const out = this.statsTensors(hidden.shape[0]!);
    this.forChunks(hidden.shape[0]!, (r0, n) => {
      const { h, logits } = this.chunkLogits(hidden, r0, n);
      logprobs(this.gpu, logits, targets, { temperature: this.temperature, rowOffset: r0, out });
      logits.release();
      if (h !== hidden) h.release();
    });
    return out;
  }

  hiddenGrad(hidden: Tensor, targets: Tensor, stats: { entropy: Tensor; lse: Tensor }, grads: TokenGrads): Tensor {
    const dHidden = this.gpu.tensor(hidden.shape, 'f32', 'd_hidden');
    this.forChunks(hidden.shape[0]!, (r0, n) => {
      const { h, logits } = this.chunkLogits(hidden, r0, n);
      this.chunkHiddenGrad(h, logits, targets, stats, grads, r0, dHidden);
      if (h !== hidden) h.release();
    });
    return dHidden;
  }

  /** tokenStats and hiddenGrad from one product per chunk, for d loss / d logp known before the forward. */
  statsAndHiddenGrad(hidden: Tensor, targets: Tensor, grads: TokenGrads): TokenStats & { lse: Tensor; dHidden: Tensor } {
    const stats = this.statsTensors(hidden.shape[0]!);
    const dHidden = this.gpu.tensor(hidden.shape, 'f32', 'd_hidden');
    this.forChunks(hidden.shape[0]!, (r0, n) => {
      const { h, logits } = this.chunkLogits(hidden, r0, n);
      logprobs(this.gpu, logits, targets, { temperature: this.temperature, rowOffset: r0, out: stats });
      this.chunkHiddenGrad(h, logits, targets, stats, grads, r0, dHidden);
      if (h !== hidden) h.release();
    });
    return { ...stats, dHidden };
  }

  /** d hidden of one chunk's rows (h, from row r0) into dHidden, lm_head's weight gradient on the side; consumes the logits. */
  private chunkHiddenGrad(h: Tensor, logits: Tensor, targets: Tensor, stats: { entropy: Tensor; lse: Tensor }, grads: TokenGrads, r0: number, dHidden: Tensor): void {
    const [n, H] = h.shape as [number, number];
    const lmHead = this.model.weights.lmHead;
    const lmGrad = this.opts.fullGrads?.get(lmHead);
    const dLogits = logprobsBackward(this.gpu, logits, targets, stats, { dlogp: grads.dlogp, dentropy: grads.dentropy ?? undefined }, { temperature: this.temperature, rowOffset: r0 });
    const dh = matmul(this.gpu, dLogits, lmHead, { label: 'lm_head.dx' });
    if (lmGrad) matmul(this.gpu, dLogits, h, { transA: true, accumulate: true, out: lmGrad, label: 'lm_head.dw' });
    this.gpu.copy(dh, dHidden, n * H * 4, 0, r0 * H * 4);
    for (const t of [dh, dLogits]) t.release();
  }

  normGrad(w: Tensor): { dw?: Tensor; accumulateDw?: boolean } {
    const dw = this.opts.fullGrads?.get(w);
    return dw ? { dw, accumulateDw: true } : {};
  }

  /** d loss / d x of y = x·Wᵀ (+ adapter), into `dx` (accumulated when given); weight grads on the side. */
  private linear(layer: number, module: LinearModule, x: Tensor, w: Tensor, dy: Tensor, dx?: Tensor): Tensor {
    const out = matmul(this.gpu, dy, w, { out: dx, accumulate: dx !== undefined, label: `${module}.dx` });
    this.opts.adapter?.backward(this.gpu, layer, module, x, dy, out);
    const dw = this.opts.fullGrads?.get(w);
    if (dw) matmul(this.gpu, dy, x, { transA: true, accumulate: true, out: dw, label: `${module}.dw` });
    return out;
  }

  /** Gradient of one decoder layer's output with respect to its input. */
  layerBackward(i: number, s: LayerSaved, dOut: Tensor): Tensor {
    const { gpu, model, ctx } = this;
    const c = model.config;
    const w = model.weights.layers[i]!;
    const T = ctx.tokens;
    if (!s.lse) throw new BackwardError(`layer ${i}: no attention lse saved (the paged attention path cannot be trained)`);

    // MLP block: out = h + down(silu(gate(m)) * up(m)), m = norm(h).
    const dAct = this.linear(i, 'down_proj', s.act, w.down, dOut);
    const { dGate, dUp } = swigluBackward(gpu, s.gate, s.up, dAct);
    const dm = this.linear(i, 'gate_proj', s.mlpNorm, w.gate, dGate);
    this.linear(i, 'up_proj', s.mlpNorm, w.up, dUp, dm);
    const dhNorm = rmsnormBackward(gpu, s.h, w.postAttnNorm, s.mlpRstd, dm, this.normGrad(w.postAttnNorm)).dx;
    const dh = add(gpu, dOut, dhNorm);
    for (const t of [dAct, dGate, dUp, dm, dhNorm]) t.release();

    // Attention block: h = x + o(attn(rope(qnorm(q(n))), rope(knorm(k(n))), v(n))), n = norm(x).
    const dAttn = this.linear(i, 'o_proj', s.attn, w.o, dh);
    const o = s.attn.view([T, c.numHeads, c.headDim]);
    const { dq, dk, dv } = attentionBackward(gpu, s.q, s.k, s.v, o, s.lse, dAttn.view([T, c.numHeads, c.headDim]), ctx.seqStarts, ctx.numSeqs, model.dims);
    const dqn = ropeBackward(gpu, dq, ctx.positions, model.rope);
    const dkn = ropeBackward(gpu, dk, ctx.positions, model.rope);
    const dqPre = rmsnormBackward(gpu, s.qPre, w.qNorm, s.qRstd, dqn, this.normGrad(w.qNorm)).dx;
    const dkPre = rmsnormBackward(gpu, s.kPre, w.kNorm, s.kRstd, dkn, this.normGrad(w.kNorm)).dx;
    const dn = this.linear(i, 'q_proj', s.attnNorm, w.q, dqPre.view([T, c.numHeads * c.headDim]));
    this.linear(i, 'k_proj', s.attnNorm, w.k, dkPre.view([T, c.numKvHeads * c.headDim]), dn);
    this.linear(i, 'v_proj', s.attnNorm, w.v, dv.view([T, c.numKvHeads * c.headDim]), dn);
    const dxNorm = rmsnormBackward(gpu, s.x, w.inputNorm, s.attnRstd, dn, this.normGrad(w.inputNorm)).dx;
    const dx = add(gpu, dh, dxNorm);
    for (const t of [dAttn, dq, dk, dv, dqn, dkn, dqPre, dkPre, dn, dxNorm, dh]) t.release();
    return dx;
  }
}
