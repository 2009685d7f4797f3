// The demo task set (builtin 'demo', the embedded demo model's task): seeded, validation held out by
// problem, answers right (re-computed from the prompt and graded by the math grader), clear errors.
import { describe, expect, it } from 'vitest';
import { BUILTIN_SETS, BuiltinTaskError, builtinTasks } from '../../src/tasks/builtin/index.ts';
import { DEMO_MAX_A, DEMO_MAX_B, demoSpace, demoSplitOf } from '../../src/tasks/builtin/demo.ts';
import { gradeTask } from '../../src/tasks/grade.ts';
import { loadTasks } from '../../src/tasks/source.ts';

const PROMPT = /^What is (\d+) ([+-]) (\d+)\?$/;

describe('builtin demo tasks', () => {
  it('are seeded: the same seed gives the same tasks, another seed other ones', async () => {
    const a = await loadTasks({ kind: 'math', builtin: 'demo', seed: 7 });
    const b = await loadTasks({ kind: 'math', builtin: 'demo', seed: 7 });
    const c = await loadTasks({ kind: 'math', builtin: 'demo', seed: 8 });
    expect(a.train).toEqual(b.train);
    expect(a.validation).toEqual(b.validation);
    expect(a.train.map((t) => t.prompt)).not.toEqual(c.train.map((t) => t.prompt));
    expect(a.train).toHaveLength(512);
    expect(a.validation).toHaveLength(64);
    expect(a.description).toMatch(/demo/);
    // Task i does not depend on the count asked for.
    const few = await loadTasks({ kind: 'math', builtin: 'demo', seed: 7, train: 10, validation: 5 });
    expect(few.train).toEqual(a.train.slice(0, 10));
    expect(few.validation).toEqual(a.validation.slice(0, 5));
  });

  it('hold validation out: no validation problem is a train problem, validation problems are distinct', () => {
    for (const seed of [0, 1, 2, 3]) {
      const tasks = builtinTasks({ kind: 'math', builtin: 'demo', seed, train: 3000, validation: 64 });
      const train = new Set(tasks.filter((t) => t.split === 'train').map((t) => t.prompt));
      const val = tasks.filter((t) => t.split === 'validation').map((t) => t.prompt);
      expect(val).toHaveLength(64);
      expect(new Set(val).size).toBe(64);
      for (const p of val) expect(train.has(p)).toBe(false);
      expect(new Set(tasks.map((t) => t.id)).size).toBe(tasks.length);
    }
  });

  it('partition the problem space by a fixed rule', () => {
    const space = demoSpace();
    expect(new Set(space.map((p) => p.prompt)).size).toBe(space.length);
    const val = space.filter((p) => demoSplitOf(0, p) === 'validation').length;
    expect(val).toBeGreaterThan(64);
    expect(val).toBeLessThan(space.length / 2);
  });

  it('have right answers, plain integers the math grader accepts', async () => {
    const { train, validation } = await loadTasks({ kind: 'math', builtin: 'demo', seed: 3, train: 40, validation: 20 });
    for (const t of [...train, ...validation]) {
      const m = PROMPT.exec(t.prompt);
      expect(m, t.prompt).not.toBeNull();
      const [a, op, b] = [Number(m![1]), m![2], Number(m![3])];
      expect(a).toBeLessThanOrEqual(DEMO_MAX_A);
      expect(b).toBeLessThanOrEqual(DEMO_MAX_B);
      const want = op === '+' ? a + b : a - b;
      expect(want).toBeGreaterThanOrEqual(0);
      expect(t.answer).toBe(String(want));
      expect(t.kind).toBe('math');
      expect(t.source).toBe('builtin:math/demo');
    }
    const t = validation[0]!;
    expect((await gradeTask(t, `${t.prompt} ... \\boxed{${t.answer}}`)).reward).toBe(1);
    expect((await gradeTask(t, `\\boxed{${Number(t.answer) + 1}}`)).reward).toBe(0);
  });

  it('refuse unknown set names (listing the known ones), levels, and more validation than held out', async () => {
    await expect(loadTasks({ kind: 'math', builtin: 'nope' })).rejects.toThrow(/unknown built-in math task set "nope" \(known: default, demo\)/);
    expect(() => builtinTasks({ kind: 'code', builtin: 'demo' })).toThrow(/known: default\)/);
    expect(() => builtinTasks({ kind: 'math', builtin: 'demo', levels: [1] })).toThrow(BuiltinTaskError);
    expect(() => builtinTasks({ kind: 'math', builtin: 'demo', validation: 10_000 })).toThrow(/held-out part has \d+ distinct problems/);
    expect(BUILTIN_SETS.math).toContain('demo');
    // The default set is unchanged by the option.
    const d = builtinTasks({ kind: 'math', seed: 1, train: 4, validation: 2 });
    expect(builtinTasks({ kind: 'math', seed: 1, train: 4, validation: 2, builtin: 'default' })).toEqual(d);
  });
});
