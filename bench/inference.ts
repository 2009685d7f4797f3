// Model-level inference benchmark with random weights of a released Qwen3 shape (default Qwen3-0.6B):
//   prefill tokens/s  — packed prompts written into the paged KV cache, logits of each last token only
//                       (8 × 1024 and 1 × 512 tokens), as generation's prefill runs;
//   decode tokens/s   — one step of S sequences (S = 1 and 256) each with 1024 tokens already cached:
//                       S / (time of one forward step). The logits stay on the GPU (no sampling/readback).
//                       At S = 1 also the host's microseconds to record a command of the step (unsubmitted).
// Weights f16 when the device has shader-f16 (else f32), KV cache likewise. Timing: one warm-up call, then
// the median of REPEATS calls, wall clock around gpu.sync(). bench/torch/bench_inference.py writes the same
// names for transformers (bf16, sdpa).
import type { Gpu } from '../src/gpu/gpu.ts';
import type { Qwen3Config } from '../src/model/config.ts';
import { KvCache, releaseBatch } from '../src/model/kv-cache.ts';
import { qwen3Preset } from '../src/model/presets.ts';
import { Qwen3Model } from '../src/model/qwen3.ts';
import { randomQwen3Weights, releaseQwen3Weights } from '../src/model/weights.ts';
import { mulberry32 } from '../src/util/mulberry32.ts';
import { benchPreset } from './preset.ts';
import { benchRow, type BenchRow } from './results.ts';
import { medianSecondsPerCall } from './timing.ts';

const REPEATS = 5;
const PAGE = 16;

interface Plan {
  prefill: [number, number][]; // [sequences, tokens each]
  decode: number[]; // batch sizes
  context: number; // cached tokens per sequence for decode
}

const FULL: Plan = { prefill: [[8, 1024], [1, 512]], decode: [1, 256], context: 1024 };
const QUICK: Plan = { prefill: [[2, 32], [1, 16]], decode: [1, 4], context: 32 };

/** A tiny model for --quick (seconds on a CPU driver). */
const TINY: Qwen3Config = { ...qwen3Preset('Qwen3-0.6B'), hiddenSize: 64, intermediateSize: 128, numLayers: 2, numHeads: 4, numKvHeads: 2, headDim: 16, vocabSize: 512 };

/** Host time to record one call, per command recorded (median of `steps` calls after a warm-up one), with each
 * recording dropped unsubmitted: at batch 1 the decode step is bound by this, not by the GPU. */
function hostRecordMicros(gpu: Gpu, record: () => void, steps: number): number {
  record();
  gpu.discardBatch();
  const perCommand: number[] = [];
  for (let i = 0; i < steps; i++) {
    const t0 = performance.now();
    record();
    const us = (performance.now() - t0) * 1000;
    perCommand.push(us / Math.max(1, gpu.discardBatch()));
  }
  perCommand.sort((a, b) => a - b);
  return perCommand[Math.floor(perCommand.length / 2)]!;
}

function randomIds(n: number, vocab: number, seed: number): Uint32Array {
  const next = mulberry32(seed);
  return Uint32Array.from({ length: n }, () => Math.floor(next() * vocab));
}

export async function benchInference(gpu: Gpu, opts: { quick: boolean; preset?: string; filter?: string }): Promise<BenchRow[]> {
  const plan = opts.quick ? QUICK : FULL;
  const { name: presetName, config } = benchPreset('benchInference', opts, TINY);
  const dtype = gpu.f16 ? 'f16' : 'f32';
  const tag = `${presetName.toLowerCase()}_${dtype}`;
  const wanted = (name: string) => !opts.filter || name.includes(opts.filter);
  const weights = randomQwen3Weights(gpu, config, 1, { dtype });
  const model = new Qwen3Model(gpu, config, weights);
  const rows: BenchRow[] = [];
  const kvFor = (seqs: number, tokens: number) =>
    new KvCache(gpu, { layers: config.numLayers, nKv: config.numKvHeads, headDim: config.headDim, pageSize: PAGE, numPages: seqs * Math.ceil(tokens / PAGE), dtype });
  try {
    for (const [S, L] of plan.prefill) {
      const name = `inference_prefill_${S}x${L}_${tag}`;
      if (!wanted(name)) continue;
      const kv = kvFor(S, L);
      const pages = Array.from({ length: S }, () => kv.allocate(Math.ceil(L / PAGE)));
      const batch = kv.buildBatch(pages.map((p) => ({ pages: p, cachedLen: 0, newTokens: L })));
      const ids = randomIds(S * L, config.vocabSize, 7);
      const seqLens = new Array<number>(S).fill(L);
      const sec = await medianSecondsPerCall(gpu, () => model.forward({ ids, seqLens, cache: { kv, batch } }, { lastOnly: true }).release(), { calls: 1, repeats: opts.quick ? 2 : REPEATS });
      rows.push(benchRow(gpu, name, (S * L) / sec, 'tokens/s'));
      releaseBatch(batch);
      kv.destroy();
    }
    for (const S of plan.decode) {
      const name = `inference_decode_b${S}_ctx${plan.context}_${tag}`;
      if (!wanted(name)) continue;
      // The cache's contents do not change the work: the step attends to `context` cached slots per sequence
      // and rewrites the last one, so every timed step is the same.
      const kv = kvFor(S, plan.context);
      const pages = Array.from({ length: S }, () => kv.allocate(Math.ceil(plan.context / PAGE)));
      const batch = kv.buildBatch(pages.map((p) => ({ pages: p, cachedLen: plan.context - 1, newTokens: 1 })));
      const ids = gpu.upload(randomIds(S, config.vocabSize, 9), [S], 'u32', 'bench.ids');
      const sec = await medianSecondsPerCall(gpu, () => model.decode(ids, { kv, batch }).release(), { calls: 1, repeats: opts.quick ? 2 : REPEATS * 2 });
      rows.push(benchRow(gpu, name, S / sec, 'tokens/s'));
      // Not under --profile: the profiler's queries are part of the batch that discardBatch would drop.
      if (S === 1 && !gpu.profiler) rows.push(benchRow(gpu, `${name}_host_record_us_per_command`, hostRecordMicros(gpu, () => model.decode(ids, { kv, batch }).release(), opts.quick ? 3 : 50), 'us'));
      ids.release();
      releaseBatch(batch);
      kv.destroy();
    }
  } finally {
    model.release();
    releaseQwen3Weights(weights);
  }
  return rows;
}
