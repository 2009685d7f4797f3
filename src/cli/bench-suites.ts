// Benchmark suites `troupe bench <suite>` can run. To add one: one entry in BENCH_SUITES.
import { numberOption } from './args.ts';
import { benchAttention } from '../../bench/attention.ts';
import { benchDispatch } from '../../bench/dispatch.ts';
import { benchGraders } from '../../bench/graders.ts';
import { benchGrpoStep } from '../../bench/grpo-step.ts';
import { benchKernels } from '../../bench/kernels.ts';
import { benchInference } from '../../bench/inference.ts';
import { benchLoad } from '../../bench/load.ts';
import { benchLoraRows } from '../../bench/lora-rows.ts';
import { benchRollout } from '../../bench/rollout.ts';
import { benchTraining } from '../../bench/training.ts';
import type { BenchRow } from '../../bench/results.ts';
import type { Gpu } from '../gpu/gpu.ts';

export interface BenchSuiteOptions {
  /** Tiny shapes that finish in seconds on a CPU driver (npm start, tests). */
  quick: boolean;
  /** Only benchmarks whose name contains this text. */
  filter?: string;
  /** Values of the suite's own options (declared in `options`). */
  extra: Record<string, string | boolean | undefined>;
}

export interface BenchSuite {
  name: string;
  summary: string;
  /** Options beyond --quick/--filter/--json/--out, in node:util parseArgs form; shown in the usage. */
  options?: Record<string, { type: 'string' | 'boolean'; help: string }>;
  run(gpu: Gpu, opts: BenchSuiteOptions): Promise<BenchRow[]>;
}

export const BENCH_SUITES: BenchSuite[] = [
  { name: 'attention', summary: 'prefill, backward, paged decode/prefill, kv write in GFLOP/s or GB/s (bench/attention.ts)', run: (gpu, o) => benchAttention(gpu, { quick: o.quick, filter: o.filter }) },
  { name: 'dispatch', summary: 'host-side cost of a dispatch in us: record, submit, wait; bind groups cached or not; the WebGPU calls alone (bench/dispatch.ts)', run: (gpu, o) => benchDispatch(gpu, { quick: o.quick, filter: o.filter }) },
  { name: 'graders', summary: 'reward graders: latency, and how far past their time limits the code sandbox and the math symbolic check stop, in ms (bench/graders.ts)', run: (gpu, o) => benchGraders(gpu, { quick: o.quick, filter: o.filter }) },
  {
    name: 'grpo',
    summary: 'one GRPO step of Voting (64 episodes, 256 sequences x 128 new tokens, 2 rank-64 adapters): seconds of the step, rollout, reward and update, tokens/s (bench/grpo-step.ts)',
    options: { preset: { type: 'string', help: 'model shape: Qwen3-0.6B (default), Qwen3-1.7B, Qwen3-4B' } },
    run: (gpu, o) => benchGrpoStep(gpu, { quick: o.quick, filter: o.filter, preset: typeof o.extra.preset === 'string' ? o.extra.preset : undefined }),
  },
  { name: 'kernels', summary: 'matmul, softmax, elementwise … in GFLOP/s or GB/s (bench/kernels.ts)', run: (gpu, o) => benchKernels(gpu, { quick: o.quick, filter: o.filter }) },
  { name: 'load', summary: 'random Qwen3 weights and bf16 checkpoint loading onto the GPU in GB/s (bench/load.ts)', run: (gpu, o) => benchLoad(gpu, { quick: o.quick, filter: o.filter }) },
  { name: 'lora', summary: 'per-row multi-LoRA (3 adapters + base interleaved): lora_rows bank vs one adapter, GB/s (bench/lora-rows.ts)', run: (gpu, o) => benchLoraRows(gpu, { quick: o.quick, filter: o.filter }) },
  {
    name: 'model',
    summary: 'Qwen3 prefill and decode tokens/s with random weights (bench/inference.ts)',
    options: { preset: { type: 'string', help: 'model shape: Qwen3-0.6B (default), Qwen3-1.7B, Qwen3-4B' } },
    run: (gpu, o) => benchInference(gpu, { quick: o.quick, filter: o.filter, preset: typeof o.extra.preset === 'string' ? o.extra.preset : undefined }),
  },
  {
    name: 'rollout',
    summary: '256 GRPO-shaped generations through the rollout engine, tokens/s, with and without 3 LoRA adapters (bench/rollout.ts)',
    options: { preset: { type: 'string', help: 'model shape: Qwen3-0.6B (default), Qwen3-1.7B, Qwen3-4B' } },
    run: (gpu, o) => benchRollout(gpu, { quick: o.quick, filter: o.filter, preset: typeof o.extra.preset === 'string' ? o.extra.preset : undefined }),
  },
  {
    name: 'training',
    summary: 'one LoRA r64 step (forward + backward + AdamW) on 8 × 1024 tokens: tokens/s, peak memory, largest buffer (bench/training.ts)',
    options: {
      preset: { type: 'string', help: 'model shape: Qwen3-0.6B (default), Qwen3-1.7B, Qwen3-4B' },
      'chunk-rows': { type: 'string', help: 'rows of logits at a time in the loss (default: 2048 where tensor cores take lm_head, else 128)' },
      'recompute-attention': { type: 'boolean', help: 'run attention again in the backward instead of keeping its output (keepAttention false)' },
    },
    run: (gpu, o) =>
      benchTraining(gpu, {
        quick: o.quick,
        filter: o.filter,
        preset: typeof o.extra.preset === 'string' ? o.extra.preset : undefined,
        chunkRows: o.extra['chunk-rows'] === undefined ? undefined : numberOption('bench training', 'chunk-rows', o.extra['chunk-rows'] as string, 128),
        keepAttention: o.extra['recompute-attention'] !== true,
      }),
  },
];
