// Rollout-engine benchmark: GRPO-shaped generation with random weights of a released Qwen3 shape
// (default Qwen3-0.6B): P prompts × n samples (256 sequences = 32 × 8) of mixed prompt lengths, each
// generating exactly N new tokens (EOS ignored), through RolloutEngine: batched prefill with prefix
// sharing, continuous-batching decode, GPU sampling at temperature 0.7. Reports generated tokens/s
// (prefill included), the same with three rank-64 adapters interleaved across roles, and peak GPU
// memory; and the memory-bandwidth floor of the decode (weights + KV read once per step).
// bench/torch/bench_rollout.py runs transformers' generate on the same shapes for the baseline.
import type { Gpu } from '../src/gpu/gpu.ts';
import type { Qwen3Config } from '../src/model/config.ts';
import { AdapterSet, DEFAULT_LORA, LoraAdapter } from '../src/model/lora.ts';
import { qwen3Preset } from '../src/model/presets.ts';
import { Qwen3Model } from '../src/model/qwen3.ts';
import { randomQwen3Weights, releaseQwen3Weights } from '../src/model/weights.ts';
import { type EngineOptions, RolloutEngine } from '../src/rollout/engine.ts';
import { mulberry32 } from '../src/util/mulberry32.ts';
import { benchRow, type BenchRow } from './results.ts';

interface Plan {
  prompts: number;
  samples: number;
  newTokens: number;
  /** Prompt lengths cycle through these. */
  promptLens: number[];
}

const FULL: Plan = { prompts: 32, samples: 8, newTokens: 128, promptLens: [96, 160, 256, 400] };
const QUICK: Plan = { prompts: 2, samples: 2, newTokens: 4, promptLens: [5, 9] };
const TINY: Qwen3Config = { ...qwen3Preset('Qwen3-0.6B'), hiddenSize: 64, intermediateSize: 128, numLayers: 2, numHeads: 4, numKvHeads: 2, headDim: 16, vocabSize: 512 };

function prompt(len: number, vocab: number, seed: number): number[] {
  const next = mulberry32(seed);
  return Array.from({ length: len }, () => Math.floor(next() * vocab));
}

async function timeRun(engine: RolloutEngine, plan: Plan, roles: string[], vocab: number): Promise<{ seconds: number; tokens: number }> {
  const t0 = performance.now();
  const calls = [];
  for (let p = 0; p < plan.prompts; p++) {
    const ids = prompt(plan.promptLens[p % plan.promptLens.length]!, vocab, p + 1);
    for (let k = 0; k < plan.samples; k++) {
      const role = roles[(p * plan.samples + k) % roles.length]!;
      calls.push(engine.generate(role, ids, { maxNewTokens: plan.newTokens, temperature: 0.7, seed: p, stream: k, ignoreEos: true }));
    }
  }
  const results = await Promise.all(calls);
  return { seconds: (performance.now() - t0) / 1000, tokens: results.reduce((a, r) => a + r.ids.length, 0) };
}

/** The plan's prompts and samples for `newTokens` tokens, untimed: its prefill and decode shapes compile their
 * pipelines here rather than in the timed run (Dawn compiles on the host while it records, and the GPU waits). The
 * prefix cache is emptied after, so that the timed run prefills its prompts as a rollout does. Before 2026-12-07 the
 * warm-up was one sequence, and the 256-sequence shapes compiled inside the timed run. */
async function warmUp(engine: RolloutEngine, plan: Plan, roles: string[], vocab: number, newTokens = 2): Promise<void> {
  await timeRun(engine, { ...plan, newTokens: Math.min(newTokens, plan.newTokens) }, roles, vocab);
  engine.clearPrefixCache();
}

export async function benchRollout(gpu: Gpu, opts: { quick: boolean; preset?: string; filter?: string }): Promise<BenchRow[]> {
  const plan = opts.quick ? QUICK : FULL;
  const name = opts.quick ? 'tiny' : (opts.preset ?? 'Qwen3-0.6B');
  const config = opts.quick ? TINY : qwen3Preset(name);
  const weights = randomQwen3Weights(gpu, config, 1);
  const model = new Qwen3Model(gpu, config, weights);
  const tag = name.toLowerCase();
  const seqs = plan.prompts * plan.samples;
  const rows: BenchRow[] = [];
  const maxLen = Math.max(...plan.promptLens) + plan.newTokens;
  const kvBudgetBytes = 2 * config.numLayers * config.numKvHeads * config.headDim * 2 * seqs * (maxLen + 32);
  const want = (n: string) => !opts.filter || n.includes(opts.filter);

  const baseName = `rollout_${tag}_${seqs}seq_${plan.newTokens}new_tok_per_s`;
  if (want(baseName)) {
    const engine = new RolloutEngine(model, null, { kvBudgetBytes, maxBatchSeqs: seqs, maxPrefillTokens: 16384 });
    await warmUp(engine, plan, ['base'], config.vocabSize);
    gpu.pool.resetPeak();
    const prefilled = engine.stats.prefillTokens;  // the warm-up's
    const r = await timeRun(engine, plan, ['base'], config.vocabSize);
    rows.push(benchRow(gpu, baseName, r.tokens / r.seconds, 'tok/s'));
    rows.push(benchRow(gpu, `rollout_${tag}_${seqs}seq_peak_memory`, gpu.memory.peakBytes / 2 ** 30, 'GiB'));
    // The prompt tokens the timed run's prefills computed (a group's samples share their prompt's cached pages since 2026-12-07).
    rows.push(benchRow(gpu, `rollout_${tag}_${seqs}seq_prefill_tokens`, engine.stats.prefillTokens - prefilled, 'tokens'));
    await engine.close();
  }
  // One sequence through the engine: where the host's share of a step (recording, the read back) shows, with
  // the next steps recorded while the GPU runs the current one (the default: 2 ahead, 4 under Deno), without, and
  // 1 or 3 steps ahead. Under Deno also 6 and 8 ahead, and reads started at once as under Dawn (before 2026-12-07).
  const variants: [string, EngineOptions][] = [
    ['', {}],
    ['_no_run_ahead', { runAhead: false }],
    ['_run_ahead_1', { runAhead: 1 }],
    ['_run_ahead_3', { runAhead: 3 }],
  ];
  if (gpu.mapWaitsForQueue) variants.push(['_run_ahead_6', { runAhead: 6 }], ['_run_ahead_8', { runAhead: 8 }], ['_eager_reads', { runAhead: 3, deferReads: false }]);
  for (const [suffix, engineOpts] of variants) {
    const oneName = `rollout_${tag}_1seq_${plan.newTokens}new${suffix}_tok_per_s`;
    if (!want(oneName)) continue;
    const one: Plan = { ...plan, prompts: 1, samples: 1 };
    const engine = new RolloutEngine(model, null, { kvBudgetBytes, maxBatchSeqs: seqs, ...engineOpts });
    await warmUp(engine, one, ['base'], config.vocabSize, 8);
    const r = await timeRun(engine, one, ['base'], config.vocabSize);
    rows.push(benchRow(gpu, oneName, r.tokens / r.seconds, 'tok/s'));
    await engine.close();
  }
  const loraName = `rollout_${tag}_${seqs}seq_${plan.newTokens}new_3lora_r64_tok_per_s`;
  if (want(loraName)) {
    const adapters = new AdapterSet();
    const roles = ['generator', 'evaluator', 'aggregator'];
    for (const [i, r] of roles.entries()) adapters.add(LoraAdapter.create(gpu, r, config, DEFAULT_LORA, { seed: i + 1, randomB: 0.01 }));
    const engine = new RolloutEngine(model, null, { adapters, kvBudgetBytes, maxBatchSeqs: seqs, maxPrefillTokens: 16384 });
    for (const r of roles) engine.setRole(r, r);
    await warmUp(engine, plan, roles, config.vocabSize);
    const r = await timeRun(engine, plan, roles, config.vocabSize);
    rows.push(benchRow(gpu, loraName, r.tokens / r.seconds, 'tok/s'));
    await engine.close();
    adapters.release();
  }
  // Decode floor: every step reads the weights once and each sequence's K/V so far.
  const bytesPerWeight = gpu.f16 ? 2 : 4;
  const weightBytes = weights.layers.reduce((a, l) => a + [l.q, l.k, l.v, l.o, l.gate, l.up, l.down].reduce((b, t) => b + t.size, 0), 0) * bytesPerWeight + weights.lmHead.size * bytesPerWeight;
  const meanCtx = plan.promptLens.reduce((a, b) => a + b, 0) / plan.promptLens.length + plan.newTokens / 2;
  const kvBytes = seqs * meanCtx * 2 * config.numLayers * config.numKvHeads * config.headDim * bytesPerWeight;
  const floorSeconds = (plan.newTokens * (weightBytes + kvBytes)) / 4.8e12;
  rows.push(benchRow(gpu, `rollout_${tag}_${seqs}seq_decode_floor_s_h200`, floorSeconds, 's'));
  releaseQwen3Weights(weights);
  model.release();
  return rows;
}
