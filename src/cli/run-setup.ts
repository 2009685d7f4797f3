// What `train`, `eval` and `start` share: the GPU, the model (a directory or the built-in demo), its
// tokenizer and the task set a run names.
import { Gpu } from '../gpu/gpu.ts';
import { applyStoredTuning } from '../kernels/matmul-tune-store.ts';
import type { Qwen3Model } from '../model/qwen3.ts';
import type { Qwen3Tokenizer } from '../model/tokenizer.ts';
import { loadTasks, type TaskSet } from '../tasks/source.ts';
import type { TaskKind } from '../tasks/types.ts';
import { UsageError } from './command.ts';
import { openModel } from './model-args.ts';

export interface OpenedRun {
  gpu: Gpu;
  model: Qwen3Model;
  tokenizer: Qwen3Tokenizer;
  tasks: TaskSet;
}

/** `--task math|code` (the built-in generators, or --data FILE of that kind) or a built-in set by name (demo). */
export async function openTasks(command: string, task: string, data: string | undefined, seed: number): Promise<TaskSet> {
  const kinds: TaskKind[] = ['math', 'code'];
  if (kinds.includes(task as TaskKind)) return loadTasks({ kind: task as TaskKind, dataset: data, seed });
  if (data !== undefined) throw new UsageError(`troupe ${command}: --data needs --task math or --task code (the kind of the dataset's tasks)`);
  return loadTasks({ kind: 'math', builtin: task, seed });
}

export async function openRun(command: string, a: { model: string; dtype?: string; task: string; data?: string; seed: number }): Promise<OpenedRun> {
  const gpu = await Gpu.create();
  try {
    await useTunedMatmuls(gpu);
    const { model, tokenizer } = await openModel(gpu, command, { model: a.model, dtype: a.dtype });
    const tasks = await openTasks(command, a.task, a.data, a.seed);
    return { gpu, model, tokenizer, tasks };
  } catch (e) {
    gpu.destroy();
    throw e;
  }
}

/** Which driver runs this, in one line (printed at the start of a run). */
export function driverLine(gpu: Gpu): string {
  const r = gpu.report;
  const what = [r.vendor, r.architecture, r.description].filter(Boolean).join(' ') || 'unknown adapter';
  return `troupe: ${r.runtime} WebGPU on ${what}${r.cpuDriver ? ` (CPU driver ${r.cpuDriver}: slow; a GPU runs this faster)` : ''}; features: ${r.features.join(', ') || 'none'}`;
}

/** Makes matmul take the choices `troupe tune` stored for this GPU, if any (saying so on stderr). */
export async function useTunedMatmuls(gpu: Gpu): Promise<void> {
  const applied = await applyStoredTuning(gpu);
  if (applied) console.error(`troupe: ${applied.note}`);
}
