// Where a run's tasks come from: a dataset file/URL when one is given, else the built-in generators.

import { builtinTasks } from './builtin/index.ts';
import { type DatasetReport, formatReport, loadDataset } from './data/load.ts';
import type { DataSource } from './data/read.ts';
import type { Task, TaskKind } from './types.ts';

export interface TaskSourceOptions {
  kind: TaskKind;
  /** Dataset path, URL or Blob; absent -> built-in tasks. */
  dataset?: DataSource;
  /** Dataset adapter (default 'auto'). */
  adapter?: string;
  seed?: number;
  /** Datasets: share held out for validation (default 0.05). */
  valFraction?: number;
  /** Built-in: train/validation counts (defaults 512/64). */
  train?: number;
  validation?: number;
  /** Built-in: difficulty levels. */
  levels?: number[];
  /** Built-in: which task set (default 'default', the level generators; math also 'demo', for the demo model). */
  builtin?: string;
}

export interface TaskSet {
  train: Task[];
  validation: Task[];
  /** One line describing the source (dataset counts and bad rows, or the generator). */
  description: string;
  report?: DatasetReport;
}

export class TaskSourceError extends Error {
  override name = 'TaskSourceError';
}

export async function loadTasks(opts: TaskSourceOptions): Promise<TaskSet> {
  let tasks: Task[];
  let description: string;
  let report: DatasetReport | undefined;
  if (opts.dataset === undefined) {
    tasks = builtinTasks({ kind: opts.kind, seed: opts.seed, train: opts.train, validation: opts.validation, levels: opts.levels, builtin: opts.builtin });
    const set = opts.builtin && opts.builtin !== 'default' ? ` '${opts.builtin}'` : '';
    description = `built-in${set} ${opts.kind} tasks (seed ${opts.seed ?? 0})`;
  } else {
    if (opts.builtin !== undefined && opts.builtin !== 'default') throw new TaskSourceError(`a dataset and the built-in set '${opts.builtin}' were both given: pick one`);
    const d = await loadDataset(opts.dataset, { adapter: opts.adapter, seed: opts.seed, valFraction: opts.valFraction });
    const wrong = d.tasks.filter((t) => t.kind !== opts.kind).length;
    if (wrong > 0) throw new TaskSourceError(`dataset ${d.report.source}: holds ${d.report.adapter} (${d.tasks[0]!.kind}) tasks, but a ${opts.kind} run was asked for`);
    tasks = d.tasks;
    report = d.report;
    description = formatReport(d.report);
  }
  const train = tasks.filter((t) => t.split === 'train');
  const validation = tasks.filter((t) => t.split === 'validation');
  if (train.length === 0) throw new TaskSourceError(`${description}: no train tasks`);
  return { train, validation, description, report };
}
