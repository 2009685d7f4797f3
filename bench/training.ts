// Training-step benchmark with random weights of a released Qwen3 shape (default Qwen3-0.6B): one LoRA step
// (r64, alpha 32, all seven linears) = forward + backward with per-layer recomputation (nllLossAndGradients,
// chunked logprobs) + AdamW, on 8 packed sequences × 1024 tokens with the mean next-token NLL. Rows:
//   training_lora_r64_8x1024_<preset>_<dtype>_tok_per_s    tokens / (time of one step), median of REPEATS steps
//   ..._peak_memory                                       peak GPU memory of a step (pool: live + pooled), GiB
//   ..._largest_buffer                                    largest single GPU buffer allocated (weights included), MiB
//   ..._largest_activation                                largest activation buffer from shapes (train-memory.ts), MiB
// Weights f16 when the device has shader-f16 (else f32); LoRA weights and gradients f32. Timing: one warm-up
// step, then the median of REPEATS, wall clock (AdamW's step reads the gradient norm back, so it waits for the GPU).
// bench/torch/bench_training.py writes the same names for PyTorch + PEFT (bf16, sdpa):
//   node bin/troupe.mjs bench training --json --out training.jsonl   (Deno: deno task troupe bench training ...)
//   python3 bench/torch/bench_training.py --out bench/torch/training.json
import type { Gpu } from '../src/gpu/gpu.ts';
import { defaultChunkRows, nextTokenBatch } from '../src/model/backward.ts';
import type { Qwen3Config } from '../src/model/config.ts';
import { DEFAULT_LORA, LoraAdapter } from '../src/model/lora.ts';
import { qwen3Preset } from '../src/model/presets.ts';
import { Qwen3Model } from '../src/model/qwen3.ts';
import { largestTrainingBuffer } from '../src/model/train-memory.ts';
import { randomQwen3Weights, releaseQwen3Weights } from '../src/model/weights.ts';
import { AdamW } from '../src/optim/adamw.ts';
import { releaseLossResult } from '../src/rl/loss.ts';
import { mulberry32 } from '../src/util/mulberry32.ts';
import { benchPreset } from './preset.ts';
import { benchRow, type BenchRow } from './results.ts';
import { nllLossAndGradients } from '../src/rl/nll-gradients.ts';

const REPEATS = 3;

/** A tiny model for --quick (seconds on a CPU driver). */
const TINY: Qwen3Config = { ...qwen3Preset('Qwen3-0.6B'), hiddenSize: 64, intermediateSize: 128, numLayers: 2, numHeads: 4, numKvHeads: 2, headDim: 16, vocabSize: 512 };

function randomSeqs(n: number, len: number, vocab: number, seed: number): number[][] {
  const next = mulberry32(seed);
  return Array.from({ length: n }, () => Array.from({ length: len }, () => Math.floor(next() * vocab)));
}

export async function benchTraining(gpu: Gpu, opts: { quick: boolean; preset?: string; filter?: string; chunkRows?: number; keepAttention?: boolean }): Promise<BenchRow[]> {
  const { name: presetName, config } = benchPreset('benchTraining', opts, TINY);
  const [S, L] = opts.quick ? [2, 32] : [8, 1024];
  const lora = opts.quick ? { ...DEFAULT_LORA, rank: 8 } : DEFAULT_LORA;
  const dtype = gpu.f16 ? 'f16' : 'f32';
  const prefix = `training_lora_r${lora.rank}_${S}x${L}_${presetName.toLowerCase()}_${dtype}${opts.chunkRows === undefined ? '' : `_chunk${opts.chunkRows}`}${opts.keepAttention === false ? '_recompute_attention' : ''}`;
  const names = ['tok_per_s', 'peak_memory', 'largest_buffer', 'largest_activation'].map((n) => `${prefix}_${n}`);
  if (opts.filter && !names.some((n) => n.includes(opts.filter!))) return [];

  const weights = randomQwen3Weights(gpu, config, 1, { dtype });
  const model = new Qwen3Model(gpu, config, weights);
  const chunkRows = opts.chunkRows ?? defaultChunkRows(gpu, config);
  const adapter = LoraAdapter.create(gpu, 'bench', config, lora, { seed: 2, randomB: 0.01 });
  const opt = new AdamW(gpu, adapter.parameters(), { lr: 1e-5 });
  const batch = nextTokenBatch(randomSeqs(S, L, config.vocabSize, 5));
  const T = batch.ids.length;
  const mask = gpu.upload(batch.mask, [T], 'f32', 'bench.mask');
  const step = async () => {
    const { result, stats } = nllLossAndGradients(model, batch, mask, { adapter, chunkRows, keepAttention: opts.keepAttention });
    releaseLossResult(result);
    stats.logp.release();
    stats.entropy.release();
    await opt.step();
  };
  try {
    await step(); // pipelines compiled, buffers pooled
    gpu.pool.resetPeak();
    const times: number[] = [];
    for (let r = 0; r < (opts.quick ? 2 : REPEATS); r++) {
      const t0 = performance.now();
      await step();
      times.push((performance.now() - t0) / 1000);
    }
    times.sort((a, b) => a - b);
    const sec = times[Math.floor(times.length / 2)]!;
    const est = largestTrainingBuffer(config, { tokens: T, sequences: S, chunkRows, loraRank: lora.rank });
    const values = [
      [T / sec, 'tokens/s'],
      [gpu.memory.peakBytes / 2 ** 30, 'GiB'],
      [gpu.memory.largestBufferBytes / 2 ** 20, 'MiB'],
      [est.bytes / 2 ** 20, 'MiB'],
    ] as const;
    return names.map((n, i) => benchRow(gpu, n, values[i]![0], values[i]![1])).filter((r) => !opts.filter || r.name.includes(opts.filter));
  } finally {
    mask.release();
    opt.release();
    adapter.release();
    model.release();
    releaseQwen3Weights(weights);
  }
}
