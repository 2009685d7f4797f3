// Built-in task generators: determinism by seed, held-out validation, and answers checked
// independently (math: re-evaluated from the prompt with exact rationals; code: the reference Python
// solution run on every generated test input in Pyodide, directly, not through the sandbox).
import { describe, expect, it } from 'vitest';
import { CODE_TEMPLATES } from '../../src/tasks/builtin/code.ts';
import { BuiltinTaskError, builtinTasks } from '../../src/tasks/builtin/index.ts';
import { loadPyodide, type PyodideAPI } from 'pyodide';
import { gradeTask, TaskGradeError } from '../../src/tasks/grade.ts';
import { gradeMath } from '../../src/tasks/math/grade.ts';
import { loadTasks } from '../../src/tasks/source.ts';
import type { Task } from '../../src/tasks/types.ts';

// ---- an independent exact evaluator: integers, + - * /, unary minus, parentheses ----
type Q = [bigint, bigint];
const norm = ([p, q]: Q): Q => {
  if (q < 0n) [p, q] = [-p, -q];
  let [a, b] = [p < 0n ? -p : p, q];
  while (b) [a, b] = [b, a % b];
  return a === 0n ? [0n, 1n] : [p / a, q / a];
};
function evaluate(expr: string): Q {
  const tokens = expr.match(/\d+|[-+*/()]/g) ?? [];
  let i = 0;
  const primary = (): Q => {
    const t = tokens[i++];
    if (t === '(') {
      const v = sum();
      if (tokens[i++] !== ')') throw new Error(`unbalanced: ${expr}`);
      return v;
    }
    if (t === '-') {
      const [p, q] = primary();
      return [-p, q];
    }
    if (t === undefined || !/^\d+$/.test(t)) throw new Error(`unexpected ${t} in ${expr}`);
    return [BigInt(t), 1n];
  };
  const product = (): Q => {
    let v = primary();
    while (tokens[i] === '*' || tokens[i] === '/') {
      const op = tokens[i++];
      const [p, q] = primary();
      v = norm(op === '*' ? [v[0] * p, v[1] * q] : [v[0] * q, v[1] * p]);
    }
    return v;
  };
  const sum = (): Q => {
    let v = product();
    while (tokens[i] === '+' || tokens[i] === '-') {
      const op = tokens[i++];
      const [p, q] = product();
      v = norm([v[0] * q + (op === '+' ? p : -p) * v[1], v[1] * q]);
    }
    return v;
  };
  const v = sum();
  if (i !== tokens.length) throw new Error(`trailing tokens in ${expr}`);
  return norm(v);
}
/** The generator's LaTeX answer (`7`, `-\frac{5}{6}`) as a rational. */
function answerValue(latex: string): Q {
  const m = /^(-?)\\frac\{(\d+)\}\{(\d+)\}$/.exec(latex);
  if (m) return norm([BigInt(`${m[1]}${m[2]}`), BigInt(m[3]!)]);
  if (!/^-?\d+$/.test(latex)) throw new Error(`answer ${latex} is not in lowest-terms form`);
  return [BigInt(latex), 1n];
}
/** Prompt math ($...$) to plain arithmetic. */
const plain = (latex: string): string =>
  latex.replace(/\\frac\{(\d+)\}\{(\d+)\}/g, '($1/$2)').replace(/\\times/g, '*').replace(/\\div/g, '/');

function checkMath(t: Task): void {
  const level = t.meta!.level as number;
  const want = answerValue(t.answer!);
  if (level <= 2) {
    const m = /^Compute \$(.+)\$\./.exec(t.prompt);
    expect(m).not.toBeNull();
    expect(evaluate(plain(m![1]!))).toEqual(want);
  } else if (level === 3) {
    const m = /^Solve for \$x\$: \$(.+) = (.+)\$\.$/.exec(t.prompt);
    expect(m).not.toBeNull();
    const x = `(${want[0]}/${want[1]})`;
    const at = (side: string): Q => evaluate(side.replace(/(\d)x/g, `$1*${x}`).replace(/x/g, x));
    expect(at(m![1]!)).toEqual(at(m![2]!));
  } else {
    const expression = t.meta!.expression as string;
    expect(evaluate(expression)).toEqual(want);
    for (const n of expression.match(/\d+/g)!) {
      if (n !== '2' && n !== '100') expect(t.prompt).toMatch(new RegExp(`(^|\\D)${n}(\\D|$)`));
    }
  }
}

describe('built-in math tasks', () => {
  const tasks = builtinTasks({ kind: 'math', seed: 11, train: 200, validation: 40 });

  it('are deterministic by seed and stable in count', () => {
    expect(builtinTasks({ kind: 'math', seed: 11, train: 200, validation: 40 })).toEqual(tasks);
    const fewer = builtinTasks({ kind: 'math', seed: 11, train: 20, validation: 4 });
    expect(fewer.filter((t) => t.split === 'train')).toEqual(tasks.slice(0, 20));
    const other = builtinTasks({ kind: 'math', seed: 12, train: 200, validation: 40 });
    const same = other.filter((t, i) => t.prompt === tasks[i]!.prompt).length;
    expect(same).toBeLessThan(20);
  });

  it('cover levels 1-4 and hold out a validation split unseen in training', () => {
    const train = tasks.filter((t) => t.split === 'train');
    const val = tasks.filter((t) => t.split === 'validation');
    expect(train).toHaveLength(200);
    expect(val).toHaveLength(40);
    for (const level of [1, 2, 3, 4]) {
      expect(train.filter((t) => t.meta!.level === level).length).toBe(50);
      expect(val.filter((t) => t.meta!.level === level).length).toBe(10);
    }
    const trainPrompts = new Set(train.map((t) => t.prompt));
    for (const t of val) expect(trainPrompts.has(t.prompt)).toBe(false);
    expect(new Set(tasks.map((t) => t.id)).size).toBe(tasks.length);
  });

  it('have correct answers (evaluated independently from each prompt)', () => {
    for (const t of tasks) checkMath(t);
  });

  it('answers are in lowest terms and graded 1 by gradeMath', async () => {
    for (const t of tasks.slice(0, 40)) expect((await gradeMath(`\\boxed{${t.answer}}`, t.answer!)).reward).toBe(1);
  });

  it('gradeTask grades a math task by its answer', async () => {
    const t = tasks.find((x) => x.meta!.level === 2)!;
    expect((await gradeTask(t, `so \\boxed{${t.answer}}`)).reward).toBe(1);
    expect((await gradeTask(t, 'so \\boxed{123456789}')).reward).toBe(0);
    await expect(gradeTask({ ...t, answer: undefined }, '\\boxed{1}')).rejects.toThrow(TaskGradeError);
  });

  it('levels can be chosen; bad levels are refused', () => {
    const l3 = builtinTasks({ kind: 'math', train: 10, validation: 2, levels: [3] });
    for (const t of l3) expect(t.meta!.level).toBe(3);
    expect(() => builtinTasks({ kind: 'math', levels: [5] })).toThrow(BuiltinTaskError);
    expect(() => builtinTasks({ kind: 'code', levels: [4] })).toThrow(/levels must be integers in 1..3/);
  });

  it('are the default task source when no dataset is given', async () => {
    const set = await loadTasks({ kind: 'math', seed: 11, train: 200, validation: 40 });
    expect(set.train).toEqual(tasks.filter((t) => t.split === 'train'));
    expect(set.validation).toHaveLength(40);
    expect(set.description).toMatch(/built-in math tasks/);
  });
});

describe('built-in code tasks', () => {
  const tasks = builtinTasks({ kind: 'code', seed: 5, train: 90, validation: 12 });

  it('are deterministic by seed and well formed', () => {
    expect(builtinTasks({ kind: 'code', seed: 5, train: 90, validation: 12 })).toEqual(tasks);
    for (const t of tasks) {
      expect(t.kind).toBe('code');
      expect(t.tests!.length).toBeGreaterThanOrEqual(4);
      const fn = (t.tests![0] as { fnName: string }).fnName;
      expect(t.prompt).toContain(`\`${fn}(`);
      expect(t.meta!.solution).toMatch(new RegExp(`^def ${fn}\\(`));
      expect(new Set(t.tests!.map((x) => JSON.stringify(x))).size).toBe(t.tests!.length);
    }
    const trainPrompts = new Set(tasks.filter((t) => t.split === 'train').map((t) => t.prompt));
    for (const t of tasks.filter((x) => x.split === 'validation')) expect(trainPrompts.has(t.prompt)).toBe(false);
  });

  /** Runs `solution` in Pyodide on each test's inputs; the JSON of each result. */
  async function runPython(py: PyodideAPI, solution: string, t: Task): Promise<unknown[]> {
    const results: unknown[] = [];
    for (const test of t.tests!) {
      if (test.type !== 'functional') throw new Error('built-in code tests are functional');
      py.globals.set('args_json', JSON.stringify(test.inputs));
      const out = await py.runPythonAsync(`${solution}\nimport json\njson.dumps(${test.fnName}(*json.loads(args_json)))`);
      results.push(JSON.parse(out as string));
    }
    return results;
  }

  it('every template: the reference Python solution gives every expected output, a wrong one does not', async () => {
    const one = new Map<string, Task>();
    for (const t of tasks) if (!one.has(t.meta!.generator as string)) one.set(t.meta!.generator as string, t);
    expect([...one.keys()].sort()).toEqual([...CODE_TEMPLATES].sort());
    const py = await loadPyodide();
    for (const t of one.values()) {
      const got = await runPython(py, t.meta!.solution as string, t);
      expect({ generator: t.meta!.generator, outputs: got }).toEqual({ generator: t.meta!.generator, outputs: t.tests!.map((x) => (x as { output: unknown }).output) });
    }
    const t = one.get('nth-prime')!;
    const wrong = await runPython(py, 'def nth_prime(n):\n    return 2 * n + 1\n', t);
    expect(wrong).not.toEqual(t.tests!.map((x) => (x as { output: unknown }).output));
  }, 300_000);
});
