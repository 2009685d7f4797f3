// Autoregressive generation for several prompts at once: one packed prefill that fills the paged KV
// cache, then one decode step per new token for the sequences still running, sampling on the CPU
// (src/rollout/sample-cpu.ts). The batched GPU sampler of the rollout engine replaces the sampler later.
import type { LinearAdapter } from './adapter.ts';
import { KvCache, releaseBatch, type PagedSeq } from './kv-cache.ts';
import type { Qwen3Model } from './qwen3.ts';
import { CpuSampler, type SamplingOptions } from '../rollout/sample-cpu.ts';

export interface GenerateOptions extends SamplingOptions {
  maxNewTokens: number;
  /** Generation of a sequence ends after one of these (it is kept in the output, as Hugging Face does). */
  stopIds?: number[];
  adapter?: LinearAdapter;
  /** KV cache storage (default: the weights' dtype). */
  cacheDtype?: 'f32' | 'f16';
  pageSize?: number;
  /** Called after each step with the sequences' new tokens so far. */
  onStep?: (generated: readonly number[][]) => void;
}

export class GenerateError extends Error {
  override name = 'GenerateError';
}

/** New tokens for each prompt (stop token included when met). */
export async function generate(model: Qwen3Model, prompts: readonly number[][], opts: GenerateOptions): Promise<number[][]> {
  const { gpu, config: c } = model;
  const S = prompts.length;
  if (S === 0) throw new GenerateError('generate: no prompts');
  prompts.forEach((p, i) => {
    if (!p.length) throw new GenerateError(`generate: prompt ${i} is empty`);
  });
  if (!Number.isInteger(opts.maxNewTokens) || opts.maxNewTokens < 0) throw new GenerateError(`generate: maxNewTokens must be a non-negative integer, got ${opts.maxNewTokens}`);
  const out: number[][] = prompts.map(() => []);
  if (opts.maxNewTokens === 0) return out;
  const longest = Math.max(...prompts.map((p) => p.length)) + opts.maxNewTokens;
  if (longest > c.maxPositionEmbeddings) throw new GenerateError(`generate: ${longest} tokens exceed max_position_embeddings ${c.maxPositionEmbeddings}`);

  const pageSize = opts.pageSize ?? 16;
  const pagesPer = prompts.map((p) => Math.ceil((p.length + opts.maxNewTokens) / pageSize));
  const kv = new KvCache(gpu, {
    layers: c.numLayers,
    nKv: c.numKvHeads,
    headDim: c.headDim,
    pageSize,
    numPages: pagesPer.reduce((a, b) => a + b, 0),
    dtype: opts.cacheDtype ?? (model.weights.embed.dtype === 'f16' ? 'f16' : 'f32'),
  });
  const samplers = prompts.map((_, i) => new CpuSampler({ ...opts, seed: ((opts.seed ?? 0) + Math.imul(i, 0x9e3779b1)) >>> 0 }));
  const stop = new Set(opts.stopIds ?? []);
  const pages = pagesPer.map((n) => kv.allocate(n));
  const lens = prompts.map((p) => p.length); // tokens in the cache after the step
  try {
    // Prefill: all prompts packed, logits of each last token.
    let active = prompts.map((_, i) => i);
    let seqs: PagedSeq[] = prompts.map((p, i) => ({ pages: pages[i]!, cachedLen: 0, newTokens: p.length }));
    let ids = Uint32Array.from(prompts.flat());
    let seqLens = prompts.map((p) => p.length);
    for (;;) {
      const batch = kv.buildBatch(seqs);
      const logits = model.forward({ ids, seqLens, cache: { kv, batch } }, { adapter: opts.adapter, lastOnly: true });
      const rows = await gpu.readF32(logits);
      logits.release();
      releaseBatch(batch);
      const next: number[] = [];
      active.forEach((s, r) => {
        const tok = samplers[s]!.sample(rows.subarray(r * c.vocabSize, (r + 1) * c.vocabSize));
        out[s]!.push(tok);
        if (!stop.has(tok) && out[s]!.length < opts.maxNewTokens) next.push(s);
      });
      opts.onStep?.(out);
      if (!next.length) break;
      active = next;
      seqs = active.map((s) => ({ pages: pages[s]!, cachedLen: lens[s]!, newTokens: 1 }));
      for (const s of active) lens[s]!++;
      ids = Uint32Array.from(active.map((s) => out[s]!.at(-1)!));
      seqLens = active.map(() => 1);
    }
  } finally {
    kv.destroy();
  }
  return out;
}
