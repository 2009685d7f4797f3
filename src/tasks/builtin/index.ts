// Built-in task sets: seeded math problems and Python function tasks, the default task source when no
// dataset is given. Train and validation tasks come from separate streams, and a validation task
// never repeats a train prompt, so the validation split is held out.

import type { Split, Task, TaskKind } from '../types.ts';
import { codeProblem } from './code.ts';
import { demoTasks } from './demo.ts';
import { mathProblem } from './math.ts';
import { taskRng } from './rng.ts';

export interface BuiltinOptions {
  kind: TaskKind;
  seed?: number;
  /** Number of train tasks (default 512). */
  train?: number;
  /** Number of validation tasks (default 64). */
  validation?: number;
  /** Difficulty levels to draw from, cycled in order (default math 1-4, code 1-3; not for 'demo'). */
  levels?: number[];
  /** Which generator set (default 'default'): BUILTIN_SETS[kind] lists them ('demo': math for the demo model). */
  builtin?: string;
}

/** Named built-in task sets per kind. */
export const BUILTIN_SETS = { math: ['default', 'demo'], code: ['default'] } as const satisfies Record<TaskKind, readonly string[]>;

export class BuiltinTaskError extends Error {
  override name = 'BuiltinTaskError';
}

function makeTask(kind: TaskKind, seed: number, split: Split, index: number, level: number): Task {
  const stream = `${kind}-${split}`;
  const r = taskRng(seed, stream, index);
  const id = `builtin-${kind}-${split}-${seed}-${index}`;
  if (kind === 'math') {
    const p = mathProblem(r, level as 1 | 2 | 3 | 4);
    const meta = { level: p.level, generator: p.generator, expression: p.expression, equation: p.equation };
    return { id, kind, prompt: p.prompt, answer: p.answer, source: `builtin:math/${p.generator}`, split, meta };
  }
  const p = codeProblem(r, level as 1 | 2 | 3);
  const meta = { level: p.level, generator: p.generator, solution: p.solution };
  return { id, kind, prompt: p.prompt, tests: p.tests, source: `builtin:code/${p.generator}`, split, meta };
}

export function builtinTasks(opts: BuiltinOptions): Task[] {
  const seed = opts.seed ?? 0;
  const set = opts.builtin ?? 'default';
  const known: readonly string[] = BUILTIN_SETS[opts.kind];
  if (!known.includes(set)) throw new BuiltinTaskError(`unknown built-in ${opts.kind} task set "${set}" (known: ${known.join(', ')})`);
  if (set === 'demo') {
    if (opts.levels !== undefined) throw new BuiltinTaskError('builtin demo tasks: levels do not apply (one generator)');
    try {
      return demoTasks(seed, opts.train ?? 512, opts.validation ?? 64);
    } catch (e) {
      throw new BuiltinTaskError((e as Error).message);
    }
  }
  const maxLevel = opts.kind === 'math' ? 4 : 3;
  const levels = opts.levels ?? Array.from({ length: maxLevel }, (_, i) => i + 1);
  if (levels.length === 0 || levels.some((l) => !Number.isInteger(l) || l < 1 || l > maxLevel)) {
    throw new BuiltinTaskError(`builtin ${opts.kind} tasks: levels must be integers in 1..${maxLevel}, got [${levels.join(', ')}]`);
  }
  const nTrain = opts.train ?? 512;
  const nVal = opts.validation ?? 64;
  const train: Task[] = [];
  for (let i = 0; i < nTrain; i++) train.push(makeTask(opts.kind, seed, 'train', i, levels[i % levels.length]!));
  const trainPrompts = new Set(train.map((t) => t.prompt));
  const validation: Task[] = [];
  // Small problem spaces (level 1 code) can repeat a train prompt: skip those, within a bounded search.
  for (let i = 0; validation.length < nVal; i++) {
    if (i > 50 * (nVal + 10)) throw new BuiltinTaskError(`builtin ${opts.kind} tasks: cannot find ${nVal} validation tasks unseen in training`);
    const t = makeTask(opts.kind, seed, 'validation', i, levels[validation.length % levels.length]!);
    if (trainPrompts.has(t.prompt)) continue;
    trainPrompts.add(t.prompt);
    validation.push(t);
  }
  return [...train, ...validation];
}
