// The Qwen3 decoder, computed as Hugging Face's Qwen3ForCausalLM does, on packed batches of sequences:
//   x = embed(ids)
//   per layer:  x = x + o_proj(attention(rope(q_norm(q_proj(n))), rope(k_norm(k_proj(n))), v_proj(n))),  n = input_layernorm(x)
//               x = x + down_proj(silu(gate_proj(m)) * up_proj(m)),                                           m = post_attention_layernorm(x)
//   logits = lm_head(norm(x))      (lm_head is the embedding matrix when tied)
// Activations are f32 [T, ·] with all sequences of the batch concatenated along T; weights are f16
// (storage) or f32. Attention runs over the packed sequences (training, plain prefill) or, with a
// paged KV cache, writes each new token's K/V and attends to everything cached (prefill chunks, decode).
// Without a backward to feed (forward, decode), o_proj and down_proj add their products straight into the residual
// stream (the matmul's accumulate), the norm after it is read inside the next products where they run on
// matmul_rows without an adapter (decode shapes: matmul_rows' NORM, 6-7 dispatches a layer), and q/k norm + rope
// are one pass. The training path (layerForward) keeps every intermediate instead. The per-layer pieces are public so a backward with per-layer
// recomputation can call them and keep the saved values it needs (rmsnorm rstd, attention lse) explicit.
import type { Gpu } from '../gpu/gpu.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { attentionPaged, attentionPrefill, type AttentionDims, decodeFusesQkNormRope } from '../kernels/attention.ts';
import { add } from '../kernels/elementwise.ts';
import { embedding } from '../kernels/embedding.ts';
import { matmul, matmulRowsGlu, matmulRowsNorm, matmulRowsParts, pickMatmulVariant, ROWS_MAX_M, rowsGluApplies, rowsNormApplies, rowsPartsApply } from '../kernels/matmul.ts';
import { castDirectRows, castGluRows, castNormedRows, type DirectRows, directParts, directPartsEnabled, tensorCoreDirectPartsPlan, tiledCastsA } from '../kernels/matmul-tc.ts';
import { qkNormRope, qkNormRopeWritesCache } from '../kernels/qk-norm-rope.ts';
import { addRmsnorm, rmsnorm } from '../kernels/rmsnorm.ts';
import { rope } from '../kernels/rope.ts';
import { swiglu } from '../kernels/swiglu.ts';
import type { LinearAdapter, LinearModule } from './adapter.ts';
import type { Qwen3Config } from './config.ts';
import type { KvCache, PagedBatch } from './kv-cache.ts';
import { RopeTable } from './rope-table.ts';
import type { Qwen3Weights } from './weights.ts';

export class ModelInputError extends Error {
  override name = 'ModelInputError';
}

/** The paged KV cache for a forward: the cache and the batch tables built for these tokens (kv.buildBatch). */
export interface CacheBatch {
  kv: KvCache;
  batch: PagedBatch;
}

export interface ForwardBatch {
  /** Token ids of all sequences concatenated, [T]; a u32 tensor for ids already on the GPU (sampled). */
  ids: Uint32Array | Tensor;
  /** Tokens of each sequence in this call (sum = T). */
  seqLens: number[];
  /** Position of each token; default 0..len-1 per sequence. Not with `cache`, whose batch has them. */
  positions?: Uint32Array;
  /** Write these tokens' K/V into the cache and attend to all cached tokens of their sequence. */
  cache?: CacheBatch;
}

export interface ForwardOptions {
  adapter?: LinearAdapter;
  /** Only the last token of each sequence: logits [S, vocab]. */
  lastOnly?: boolean;
  /** Stop after the final norm: hidden [T or S, hidden] f32 (for chunked logprobs in training). */
  hiddenOnly?: boolean;
}

/** rmsnorm(x)·norm, not yet computed: the input of the products after a norm, which matmul_rows can read
 * inside their pass (Qwen3Model.linears), else computed by one rmsnorm pass. */
export interface Normed {
  x: Tensor;
  norm: Tensor;
  eps: number;
}

/** What one forward of a batch shares across layers. */
export interface LayerContext {
  tokens: number;
  numSeqs: number;
  /** u32 [T] */
  positions: Tensor;
  /** u32 [S+1] cumulative offsets of the sequences in T (plain prefill attention). */
  seqStarts: Tensor;
  cache?: CacheBatch;
  adapter?: LinearAdapter;
}

/** Every intermediate of one layer's forward, kept when a backward needs them. */
export interface LayerSaved {
  x: Tensor; // layer input [T, H]
  attnNorm: Tensor; // input_layernorm(x) [T, H]
  attnRstd: Tensor; // [T]
  qPre: Tensor; // q_proj output before q_norm [T, nHeads, hd]
  qRstd: Tensor; // [T * nHeads]
  kPre: Tensor; // [T, nKv, hd]
  kRstd: Tensor; // [T * nKv]
  q: Tensor; // after q_norm and rope [T, nHeads, hd]
  k: Tensor; // after k_norm and rope [T, nKv, hd]
  v: Tensor; // [T, nKv, hd]
  attn: Tensor; // attention output [T, nHeads * hd] (o_proj input)
  lse: Tensor | null; // [T, nHeads] (plain prefill only; the paged path keeps none)
  h: Tensor; // x + o_proj(attn) [T, H]
  mlpNorm: Tensor; // post_attention_layernorm(h) [T, H]
  mlpRstd: Tensor; // [T]
  gate: Tensor; // [T, I]
  up: Tensor; // [T, I]
  act: Tensor; // silu(gate) * up [T, I]
}

/** A layer's attention output [T, nHeads * hd] and lse [T, nHeads], kept from a forward for the backward's
 * recomputation of that layer (src/model/backward.ts), so that attention runs once per step, not twice. */
export interface AttentionKept {
  attn?: Tensor;
  lse?: Tensor;
}

export function releaseLayerSaved(s: LayerSaved): void {
  const seen = new Set<GPUBuffer>();
  for (const t of Object.values(s) as (Tensor | null)[]) {
    if (t && !seen.has(t.buffer)) {
      seen.add(t.buffer);
      t.release();
    }
  }
}

export class Qwen3Model {
  readonly dims: AttentionDims;
  readonly rope: RopeTable;
  private readonly qkNorms: (Tensor | undefined)[] = [];

  constructor(
    readonly gpu: Gpu,
    readonly config: Qwen3Config,
    readonly weights: Qwen3Weights,
  ) {
    const c = config;
    if (weights.layers.length !== c.numLayers) throw new ModelInputError(`Qwen3Model: ${weights.layers.length} layers of weights, config has ${c.numLayers}`);
    const e = weights.embed.shape;
    if (e[0] !== c.vocabSize || e[1] !== c.hiddenSize) throw new ModelInputError(`Qwen3Model: ${weights.embed.label} is [${e}], config implies [${c.vocabSize},${c.hiddenSize}]`);
    this.dims = { nHeads: c.numHeads, nKv: c.numKvHeads, headDim: c.headDim, scale: 1 / Math.sqrt(c.headDim) };
    this.rope = new RopeTable(gpu, c.headDim, c.ropeTheta, Math.min(c.maxPositionEmbeddings, 256));
  }

  /** Logits f32 [T, vocab] ([S, vocab] with lastOnly; hidden [·, H] with hiddenOnly) of a packed batch.
   * x is the residual stream: each layer adds its attention and MLP outputs into it in place. */
  forward(batch: ForwardBatch, opts: ForwardOptions = {}): Tensor {
    const { gpu, config: c, weights: w } = this;
    const ctx = this.context(batch, opts.adapter);
    let x = this.embed(batch.ids);
    try {
      for (let i = 0; i < c.numLayers; i++) {
        const l = w.layers[i]!;
        this.attention(i, { x, norm: l.inputNorm, eps: c.rmsNormEps }, ctx, undefined, undefined, x);
        this.mlp(i, { x, norm: l.postAttnNorm, eps: c.rmsNormEps }, ctx, undefined, x);
      }
      // Only the last token of each sequence (the embedding gather picks rows of any [N, H] matrix), unless every
      // sequence has one token (decode), where the rows are already those.
      if (opts.lastOnly && batch.seqLens.some((len) => len !== 1)) {
        const last = new Uint32Array(batch.seqLens.length);
        let end = 0;
        batch.seqLens.forEach((len, s) => (last[s] = (end += len) - 1));
        const rows = embedding(gpu, x, last);
        x.release();
        x = rows;
      }
      const final: Normed = { x, norm: w.norm, eps: c.rmsNormEps };
      if (opts.hiddenOnly) return this.normed(final);
      if (rowsNormApplies(gpu, x, w.norm, [w.lmHead])) return matmulRowsNorm(gpu, x, w.norm, c.rmsNormEps, [w.lmHead], ['lm_head'])[0]!;
      const hidden = this.normed(final);
      const out = matmul(gpu, hidden, w.lmHead, { transB: true, label: 'lm_head' });
      hidden.release();
      return out;
    } finally {
      x.release();
      this.releaseContext(ctx);
    }
  }

  /** rmsnorm(n.x)·n.norm as a tensor (one rmsnorm pass). */
  normed(n: Normed): Tensor {
    const { y, rstd } = rmsnorm(this.gpu, n.x, n.norm, n.eps);
    rstd.release();
    return y;
  }

  /** One decode step: one new token per sequence (ids [S]) against the paged cache; logits [S, vocab]. */
  decode(ids: Uint32Array | Tensor, cache: CacheBatch, opts: { adapter?: LinearAdapter } = {}): Tensor {
    const n = ids instanceof Uint32Array ? ids.length : ids.size;
    if (cache.batch.numSeqs !== n) throw new ModelInputError(`decode: ${n} ids for a cache batch of ${cache.batch.numSeqs} sequences`);
    return this.forward({ ids, seqLens: new Array<number>(n).fill(1), cache }, opts);
  }

  // ---- the pieces, in order ----

  /** Uploads positions and sequence offsets shared by all layers; release with releaseContext. */
  context(batch: ForwardBatch, adapter?: LinearAdapter): LayerContext {
    const tokens = batch.ids instanceof Uint32Array ? batch.ids.length : batch.ids.size;
    const { seqLens } = batch;
    if (!seqLens.length || seqLens.some((n) => !Number.isInteger(n) || n < 1)) {
      throw new ModelInputError(`forward: seqLens [${seqLens}] must be positive integers`);
    }
    const total = seqLens.reduce((a, b) => a + b, 0);
    if (total !== tokens) throw new ModelInputError(`forward: seqLens sum to ${total} but there are ${tokens} ids`);
    const starts = new Uint32Array(seqLens.length + 1);
    seqLens.forEach((n, s) => (starts[s + 1] = starts[s]! + n));
    const seqStarts = this.gpu.upload(starts, [starts.length], 'u32', 'seq_starts');
    let positions: Tensor;
    if (batch.cache) {
      if (batch.positions) throw new ModelInputError('forward: positions come from the cache batch (qPositions); pass one or the other');
      const b = batch.cache.batch;
      if (b.numSeqs !== seqLens.length) throw new ModelInputError(`forward: cache batch has ${b.numSeqs} sequences, seqLens has ${seqLens.length}`);
      if (b.qPositions.size !== tokens) throw new ModelInputError(`forward: cache batch has ${b.qPositions.size} query positions for ${tokens} tokens`);
      this.checkPosition(b.maxSeqLen - 1);
      positions = b.qPositions;
    } else {
      let pos = batch.positions;
      if (pos) {
        if (pos.length !== tokens) throw new ModelInputError(`forward: ${pos.length} positions for ${tokens} tokens`);
      } else {
        pos = new Uint32Array(tokens);
        seqLens.forEach((n, s) => {
          for (let i = 0; i < n; i++) pos![starts[s]! + i] = i;
        });
      }
      this.checkPosition(pos.reduce((a, b) => Math.max(a, b), 0));
      positions = this.gpu.upload(pos, [tokens], 'u32', 'positions');
    }
    return { tokens, numSeqs: seqLens.length, positions, seqStarts, cache: batch.cache, adapter };
  }

  releaseContext(ctx: LayerContext): void {
    ctx.seqStarts.release();
    if (!ctx.cache) ctx.positions.release();
  }

  private checkPosition(maxPos: number): void {
    if (maxPos >= this.config.maxPositionEmbeddings) {
      throw new ModelInputError(`forward: position ${maxPos} is beyond max_position_embeddings ${this.config.maxPositionEmbeddings}`);
    }
    this.rope.ensure(maxPos + 1);
  }

  /** x [T, H] f32 = embed_tokens[ids]. */
  embed(ids: Uint32Array | Tensor): Tensor {
    return embedding(this.gpu, this.weights.embed, ids);
  }

  /** y [T, out] = x·Wᵀ (+ the adapter's delta for this layer and module); `x16`: x already cast for tensor cores;
   * `into`: added into that tensor (a residual stream), which is returned. */
  linear(layer: number, module: LinearModule, x: Tensor, w: Tensor, ctx: LayerContext, x16?: DirectRows, into?: Tensor): Tensor {
    const y = matmul(this.gpu, x, w, { transB: true, label: module, x16, out: into, accumulate: into !== undefined });
    ctx.adapter?.apply(this.gpu, layer, module, x, y);
    return y;
  }

  /** linear() for modules that share their input (q, k, v; gate, up): one matmul_rows dispatch for all of them
   * where decode shapes run that kernel, and one f16 cast of x for all of them where they run on tensor cores
   * (tc_direct, or tiled); the same numbers either way. A Normed input is normed inside that matmul_rows pass
   * where it runs without an adapter, in the pass that casts it where the products run on tensor cores, else by one
   * rmsnorm pass first. */
  linears(layer: number, parts: readonly (readonly [LinearModule, Tensor])[], input: Tensor | Normed, ctx: LayerContext): Tensor[] {
    const weights = parts.map(([, w]) => w);
    const label = () => parts.map(([m]) => m).join('+');  // for the cast's dispatch only (batch 1 records none)
    if (!('shape' in input)) {
      if (!ctx.adapter && rowsNormApplies(this.gpu, input.x, input.norm, weights)) {
        return matmulRowsNorm(this.gpu, input.x, input.norm, input.eps, weights, parts.map(([module]) => module));
      }
      if (input.x.shape[0]! > ROWS_MAX_M && this.sharesCast(input.x, weights)) {  // decode rows never reach tensor cores
        // Products on tensor cores: the norm and their f16 cast of its output in one pass.
        const { y, rows } = castNormedRows(this.gpu, input.x, input.norm, input.eps, label());
        try {
          if (this.runsDirectParts(y, weights)) return this.linearsDirect(layer, parts, y, rows, ctx);
          return parts.map(([module, w]) => this.linear(layer, module, y, w, ctx, rows));
        } finally {
          y.release();
          rows.release();
        }
      }
      const n = this.normed(input);
      try {
        return this.linears(layer, parts, n, ctx);
      } finally {
        n.release();
      }
    }
    const x = input;
    if (!rowsPartsApply(this.gpu, x, weights)) {
      const x16 = this.sharesCast(x, weights) ? castDirectRows(this.gpu, x, label()) : undefined;
      const ys = x16 && this.runsDirectParts(x, weights) ? this.linearsDirect(layer, parts, x, x16, ctx) : parts.map(([module, w]) => this.linear(layer, module, x, w, ctx, x16));
      x16?.release();
      return ys;
    }
    const ys = matmulRowsParts(this.gpu, x, weights, parts.map(([module]) => module));
    parts.forEach(([module], i) => ctx.adapter?.apply(this.gpu, layer, module, x, ys[i]!));
    return ys;
  }

  /** linear() of each part as one matmul_tc_direct dispatch over x's f16 rows (directParts), each adapter's delta after. */
  private linearsDirect(layer: number, parts: readonly (readonly [LinearModule, Tensor])[], x: Tensor, rows: DirectRows, ctx: LayerContext): Tensor[] {
    const ys = directParts(this.gpu, rows, parts.map(([, w]) => w), parts.map(([module]) => module));
    parts.forEach(([module], i) => ctx.adapter?.apply(this.gpu, layer, module, x, ys[i]!));
    return ys;
  }

  /** Whether the products of x [M, K] with these weights, each of which would run on tc_direct, run as one dispatch
   * (TROUPE_TC_DIRECT_PARTS=on, and a plan for their columns side by side). */
  private runsDirectParts(x: Tensor, weights: readonly Tensor[]): boolean {
    if (!directPartsEnabled() || weights.length < 2) return false;
    const [M, K] = x.shape as [number, number];
    const direct = weights.every((w) => pickMatmulVariant(this.gpu, { M, N: w.shape[0]!, K, transA: false, transB: true }, { a: x.dtype, b: w.dtype }) === 'tc_direct');
    return direct && typeof tensorCoreDirectPartsPlan(this.gpu, M, K, weights) !== 'string';
  }

  /** Whether products of x [M, K] (or of its norm: the same shape and type) with these weights all run on tensor
   * cores that read one f16 cast of it (tc_direct, or tiled with tiledCastsA). */
  private sharesCast(x: Tensor, weights: readonly Tensor[]): boolean {
    const [M, K] = x.shape as [number, number];
    const variants = weights.map((w) => pickMatmulVariant(this.gpu, { M, N: w.shape[0]!, K, transA: false, transB: true }, { a: x.dtype, b: w.dtype }));
    return variants.every((v) => v === 'tc_direct') || (variants.every((v) => v === 'tc') && tiledCastsA({ M, K, transA: false }, x.dtype));
  }

  /** One decoder layer: returns the new residual stream (x is not released). With `save`, every
   * intermediate is kept there (the caller releases them with releaseLayerSaved); a `save` that already holds
   * this layer's attention output and lse (kept by an earlier forward, see AttentionKept) reuses them instead
   * of running the attention again. With `keep` (and no `save`) the attention output and lse are kept there. */
  layerForward(i: number, x: Tensor, ctx: LayerContext, save?: Partial<LayerSaved>, keep?: AttentionKept): Tensor {
    const { gpu, config: c } = this;
    const w = this.weights.layers[i]!;
    const n = rmsnorm(gpu, x, w.inputNorm, c.rmsNormEps);
    const attn = this.attention(i, n.y, ctx, save, keep);
    const m = addRmsnorm(gpu, x, attn, w.postAttnNorm, c.rmsNormEps);
    attn.release();
    const mlp = this.mlp(i, m.y, ctx, save);
    const out = add(gpu, m.h, mlp);
    mlp.release();
    if (save) {
      Object.assign(save, { x, attnNorm: n.y, attnRstd: n.rstd, h: m.h, mlpNorm: m.y, mlpRstd: m.rstd });
    } else {
      for (const t of [n.y, n.rstd, m.h, m.y, m.rstd]) t.release();
    }
    return out;
  }

  /** o_proj(attention(rope(q_norm(q_proj(n))), rope(k_norm(k_proj(n))), v_proj(n))) for layer i, n = input_layernorm(x).
   * Without `save` the norms and rotary embedding run as one fused pass (nothing of them is kept). With
   * `residual`, o_proj's output is added into it, which is returned. */
  attention(i: number, n: Tensor | Normed, ctx: LayerContext, save?: Partial<LayerSaved>, keep?: AttentionKept, residual?: Tensor): Tensor {
    const { gpu, config: c, dims } = this;
    const w = this.weights.layers[i]!;
    const T = ctx.tokens;
    const eps = c.rmsNormEps;
    const [qOut, kOut, vOut] = this.linears(i, [['q_proj', w.q], ['k_proj', w.k], ['v_proj', w.v]], n, ctx) as [Tensor, Tensor, Tensor];
    const qPre = qOut.view([T, c.numHeads, c.headDim]);
    const kPre = kOut.view([T, c.numKvHeads, c.headDim]);
    const v = vOut.view([T, c.numKvHeads, c.headDim]);
    let q = qPre;
    let k = kPre;
    // A decode step norms and rotates q and k inside its attention pass, which also writes k and v to the cache.
    if (!save && ctx.cache && decodeFusesQkNormRope(gpu, dims, ctx.cache.kv.dtype, T, ctx.cache.batch, qPre.dtype)) {
      const { kv, batch } = ctx.cache;
      const o = attentionPaged(gpu, qPre, kv, i, batch, dims, undefined, { k: kPre, v, qkNorm: this.qkNorm(i), cos: this.rope.cos, sin: this.rope.sin, eps });
      const proj = this.linear(i, 'o_proj', o.view([T, c.numHeads * c.headDim]), w.o, ctx, undefined, residual);
      for (const t of [qPre, kPre, v, o]) t.release();
      return proj;
    }
    // Over the cache, the fused pass also writes k and v to their slots (where the device binds enough buffers).
    const cacheInPass = !save && ctx.cache !== undefined && qkNormRopeWritesCache(gpu);
    if (save) {
      const qn = rmsnorm(gpu, qPre, w.qNorm, eps);
      const kn = rmsnorm(gpu, kPre, w.kNorm, eps);
      q = rope(gpu, qn.y, ctx.positions, this.rope);
      k = rope(gpu, kn.y, ctx.positions, this.rope);
      Object.assign(save, { qPre, qRstd: qn.rstd, kPre, kRstd: kn.rstd, q, k, v });
    } else if (cacheInPass) {
      const { kv, batch } = ctx.cache!;
      qkNormRope(gpu, qPre, kPre, w.qNorm, w.kNorm, ctx.positions, this.rope, eps, { v, slots: batch.slots, kc: kv.k[i]!, vc: kv.v[i]! });
    } else {
      qkNormRope(gpu, qPre, kPre, w.qNorm, w.kNorm, ctx.positions, this.rope, eps);
    }
    let o: Tensor;
    let lse: Tensor | null = null;
    if (ctx.cache) {
      const { kv, batch } = ctx.cache;
      if (!cacheInPass) kv.write(i, k, v, batch.slots);
      o = attentionPaged(gpu, q, kv, i, batch, dims);
    } else if (save?.attn && save.lse) {
      // Kept by the first forward of a training step: attention is deterministic, so this is what it would give.
      o = save.attn;
      lse = save.lse;
    } else {
      ({ o, lse } = attentionPrefill(gpu, q, k, v, ctx.seqStarts, ctx.numSeqs, dims));
    }
    const attn = o.view([T, c.numHeads * c.headDim]);
    const proj = this.linear(i, 'o_proj', attn, w.o, ctx, undefined, residual);
    if (save) {
      Object.assign(save, { attn, lse });
    } else if (keep && lse) {
      keep.attn = attn;
      keep.lse = lse;
      for (const t of [q, k, v]) t.release();
    } else {
      for (const t of [q, k, v, o]) t.release();
      lse?.release();
    }
    return proj;
  }

  /** down_proj(silu(gate_proj(m)) * up_proj(m)) for layer i, m = post_attention_layernorm(h). With `residual`,
   * down_proj's output is added into it, which is returned. */
  mlp(i: number, m: Tensor | Normed, ctx: LayerContext, save?: Partial<LayerSaved>, residual?: Tensor): Tensor {
    const w = this.weights.layers[i]!;
    const [gate, up] = this.linears(i, [['gate_proj', w.gate], ['up_proj', w.up]], m, ctx) as [Tensor, Tensor];
    // Decode shapes without adapters: SwiGLU inside down_proj's matmul_rows pass (an adapter's delta needs act).
    if (!save && !ctx.adapter && rowsGluApplies(this.gpu, gate, up, w.down)) {
      const down = matmulRowsGlu(this.gpu, gate, up, w.down, 'down_proj', residual);
      gate.release();
      up.release();
      return down;
    }
    // down_proj on tensor cores: SwiGLU and the f16 cast of its output in one pass (act [T, I] has gate's shape and type).
    const cast = this.sharesCast(gate, [w.down]) ? castGluRows(this.gpu, gate, up, 'down_proj') : undefined;
    const act = cast?.y ?? swiglu(this.gpu, gate, up);
    const down = this.linear(i, 'down_proj', act, w.down, ctx, cast?.rows, residual);
    cast?.rows.release();
    if (save) Object.assign(save, { gate, up, act });
    else for (const t of [gate, up, act]) t.release();
    return down;
  }

  /** Layer i's q_norm and k_norm weights side by side, f32 [2, headDim] (the fused decode attention reads both from
   * one binding), copied on first use. */
  private qkNorm(i: number): Tensor {
    let t = this.qkNorms[i];
    if (!t) {
      const w = this.weights.layers[i]!;
      const bytes = this.config.headDim * 4;
      t = this.gpu.tensor([2, this.config.headDim], 'f32', `model.layers.${i}.self_attn.qk_norm`);
      this.gpu.copy(w.qNorm, t, bytes, 0, 0);
      this.gpu.copy(w.kNorm, t, bytes, 0, bytes);
      this.qkNorms[i] = t;
    }
    return t;
  }

  release(): void {
    this.rope.release();
    for (const t of this.qkNorms) t?.release();
    this.qkNorms.length = 0;
  }
}
