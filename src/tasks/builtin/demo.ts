// The demo task set (`builtin: 'demo'`): small integer sums and differences that the embedded demo
// model (public/demo-model, a tiny Qwen3 trained by troupe itself) can partly learn, so multi-agent
// RL has something to improve on any machine. Problems are `What is a + b?` / `What is a - b?` with
// a in 0..DEMO_MAX_A and b in 0..9 (differences never negative); answers are plain integers.
// The split is a property of the problem, not of the draw: a fixed hash of (seed, problem) puts about
// one problem in five in validation, and train / validation draw only from their own part, so the
// validation split is held out whatever the counts asked for.

import type { Split, Task } from '../types.ts';
import { hash32 } from '../data/split.ts';
import { taskRng } from './rng.ts';

export const DEMO_MAX_A = 29;
export const DEMO_MAX_B = 9;
/** Share of the problem space held out for validation. */
export const DEMO_VAL_FRACTION = 1 / 5;

export interface DemoProblem {
  a: number;
  b: number;
  op: '+' | '-';
  prompt: string;
  answer: string;
  /** 1: both operands one digit; 2: a has two digits. */
  level: 1 | 2;
}

export function demoProblem(a: number, op: '+' | '-', b: number): DemoProblem {
  if (op === '-' && b > a) throw new RangeError(`demo problem ${a} - ${b}: differences are never negative`);
  return { a, b, op, prompt: `What is ${a} ${op} ${b}?`, answer: String(op === '+' ? a + b : a - b), level: a >= 10 ? 2 : 1 };
}

/** Every problem of the demo space, in a fixed order. */
export function demoSpace(): DemoProblem[] {
  const out: DemoProblem[] = [];
  for (let a = 0; a <= DEMO_MAX_A; a++) {
    for (let b = 0; b <= DEMO_MAX_B; b++) {
      out.push(demoProblem(a, '+', b));
      if (b <= a) out.push(demoProblem(a, '-', b));
    }
  }
  return out;
}

/** Which split a problem belongs to under `seed`. */
export function demoSplitOf(seed: number, p: Pick<DemoProblem, 'prompt'>): Split {
  return hash32(`demo/${seed}/${p.prompt}`) / 2 ** 32 < DEMO_VAL_FRACTION ? 'validation' : 'train';
}

/** `train` tasks drawn (with repeats) from the train part, `validation` distinct tasks from the held-out part. */
export function demoTasks(seed: number, train: number, validation: number): Task[] {
  const space = demoSpace();
  const parts: Record<Split, DemoProblem[]> = { train: [], validation: [] };
  for (const p of space) parts[demoSplitOf(seed, p)].push(p);
  if (validation > parts.validation.length) {
    throw new RangeError(`builtin demo tasks: ${validation} validation tasks asked for, the held-out part has ${parts.validation.length} distinct problems`);
  }
  const make = (split: Split, index: number, p: DemoProblem): Task => ({
    id: `builtin-demo-${split}-${seed}-${index}`,
    kind: 'math',
    prompt: p.prompt,
    answer: p.answer,
    source: 'builtin:math/demo',
    split,
    meta: { level: p.level, generator: 'demo', expression: `${p.a} ${p.op} ${p.b}` },
  });
  const out: Task[] = [];
  for (let i = 0; i < train; i++) {
    const r = taskRng(seed, 'demo-train', i);
    out.push(make('train', i, r.pick(parts.train)));
  }
  // Validation: a seeded shuffle of the held-out part, so its tasks are distinct.
  const pool = [...parts.validation];
  const r = taskRng(seed, 'demo-validation', 0);
  for (let i = pool.length - 1; i > 0; i--) {
    const j = r.int(0, i);
    [pool[i], pool[j]] = [pool[j]!, pool[i]!];
  }
  for (let i = 0; i < validation; i++) out.push(make('validation', i, pool[i]!));
  return out;
}
