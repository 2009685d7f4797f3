// The math reward on a table of equivalent (1) and non-equivalent (0) answer pairs covering extraction,
// normalisation, exact/numeric/symbolic comparison and structures, plus the time limit.
import { afterAll, describe, expect, it } from 'vitest';
import { extractBoxed } from '../../src/tasks/math/extract.ts';
import { gradeMath, MathAnswerError } from '../../src/tasks/math/grade.ts';
import { normalizeAnswer } from '../../src/tasks/math/normalize.ts';
import { closeSharedSymbolicChecker, SymbolicChecker } from '../../src/tasks/math/symbolic-host.ts';

/** [response's boxed content, reference answer, expected reward]. */
const BOXED: [string, string, 0 | 1][] = [
  // exact and whitespace
  ['5', '5', 1],
  [' 5 ', '5', 1],
  ['5', '6', 0],
  ['-3', '3', 0],
  ['x + 1', 'x+1', 1],
  // \left / \right, \dfrac / \tfrac
  ['\\left( 1, 2 \\right)', '(1,2)', 1],
  ['\\left[0, 1\\right)', '[0,1)', 1],
  ['\\dfrac{1}{2}', '\\frac{1}{2}', 1],
  ['\\tfrac{3}{4}', '\\frac34', 1],
  ['\\frac{3}{4}', '\\frac{4}{3}', 0],
  ['\\frac12', '\\frac{1}{2}', 1],
  // \text{}, \mathrm{}, units
  ['\\text{5}', '5', 1],
  ['\\mathrm{7}', '7', 1],
  ['12 \\text{ cm}', '12', 1],
  ['12\\text{ cm}^2', '12', 1],
  ['12 \\mathrm{m}', '12', 1],
  ['12 square units', '12', 1],
  ['45 \\text{ minutes}', '45', 1],
  ['3 \\text{ apples}', '4', 0],
  ['5 \\text{ apples}', '5', 1],
  ['12 blue marbles', '12', 1],
  ['\\varnothing', '\\emptyset', 1],
  ['20 \\text{ dollars}', '20', 1],
  ['\\text{Monday}', 'Monday', 1],
  ['\\text{Tuesday}', 'Monday', 0],
  // degrees, percent
  ['30^\\circ', '30', 1],
  ['30^{\\circ}', '30', 1],
  ['30°', '30', 1],
  ['30 degrees', '30', 1],
  ['60^\\circ', '30', 0],
  ['50\\%', '50', 1],
  ['50%', '50', 1],
  ['25\\%', '50', 0],
  // trailing zeros, thousands separators, dollars
  ['2.50', '2.5', 1],
  ['3.0', '3', 1],
  ['3.00', '3', 1],
  ['1.05', '1.5', 0],
  ['1,000', '1000', 1],
  ['1{,}000', '1000', 1],
  ['1\\,000\\,000', '1000000', 1],
  ['12,345.50', '12345.5', 1],
  ['\\$5', '5', 1],
  ['\\$5.00', '5', 1],
  ['$5$', '5', 1],
  // leading "x ="
  ['x = 3', '3', 1],
  ['x=3', 'x = 3', 1],
  ['3', 'x = 3', 1],
  ['y = 2x + 3', '2x+3', 1],
  ['x = 4', '3', 0],
  ['x=1 \\text{ or } x=2', '1, 2', 1],
  ['x = 2, x = 1', '1,2', 1],
  // exact rationals and decimals
  ['0.5', '\\frac{1}{2}', 1],
  ['\\frac{2}{4}', '\\frac{1}{2}', 1],
  ['1/2', '\\frac{1}{2}', 1],
  ['-\\frac{1}{2}', '\\frac{-1}{2}', 1],
  ['-0.5', '-\\frac12', 1],
  ['0.5', '-\\frac12', 0],
  ['0.3333333', '\\frac{1}{3}', 1],
  ['0.333', '\\frac{1}{3}', 0],
  ['0.1', '\\frac{1}{10}', 1],
  ['0.125', '\\frac{1}{8}', 1],
  ['0.12', '\\frac{1}{8}', 0],
  ['100', '100.0', 1],
  ['99.99', '100', 0],
  ['3.1416', '\\pi', 0],
  ['3.14159265', '\\pi', 1],
  ['2.718', 'e', 0],
  ['1,001', '1000', 0],
  ['3.1415926536', '\\pi', 1],
  // scientific notation
  ['1.5 \\times 10^{3}', '1500', 1],
  ['1.5\\times10^3', '1500', 1],
  ['1.5e3', '1500', 1],
  ['2 \\cdot 10^{-3}', '0.002', 1],
  ['1.5 \\times 10^{4}', '1500', 0],
  // radicals
  ['\\sqrt{8}', '2\\sqrt{2}', 1],
  ['\\sqrt{12}', '2\\sqrt{3}', 1],
  ['\\frac{\\sqrt{3}}{3}', '\\frac{1}{\\sqrt{3}}', 1],
  ['\\sqrt{2}/2', '\\frac{\\sqrt2}{2}', 1],
  ['\\sqrt{8}', '3\\sqrt{2}', 0],
  ['\\sqrt[3]{8}', '2', 1],
  ['3\\sqrt{2}+1', '1+\\sqrt{18}', 1],
  // pi
  ['\\frac{\\pi}{2}', '\\pi/2', 1],
  ['2\\pi', '\\pi \\cdot 2', 1],
  ['\\pi r^2', 'r^2\\pi', 1],
  ['π/3', '\\frac{\\pi}{3}', 1],
  ['\\frac{\\pi}{3}', '\\frac{\\pi}{6}', 0],
  ['4\\pi', '4', 0],
  // other exact values
  ['e^{i\\pi}', '-1', 1],
  ['2^{10}', '1024', 1],
  ['\\log_2 8', '3', 1],
  ['\\binom{5}{2}', '10', 1],
  // floats must not decide what they cannot represent
  ['10^{10^{10}}', '\\infty', 0],
  ['1e999', '\\infty', 0],
  ['1e-999', '0', 0],
  ['10^{-400}', '0', 0],
  ['10^{-11}', '0', 0],
  ['\\sin(\\pi)', '0', 1],
  ['\\sin(\\pi/6)', '\\frac12', 1],
  ['\\frac{1}{0}', '\\infty', 0],
  ['1.0000001', '1', 1],
  ['1.00001', '1', 0],
  // algebraic expressions (checked at sample points)
  ['x^2+2x+1', '(x+1)^2', 1],
  ['x^2+2x', '(x+1)^2', 0],
  ['\\frac{x^2-1}{x-1}', 'x+1', 1],
  ['2(a+b)', '2a+2b', 1],
  ['2(a+b)', '2a+b', 0],
  ['x', 'y', 0],
  ['\\frac{1}{2}', '\\frac{1}{3}', 0],
  ['2\\sqrt{3}', '3\\sqrt{2}', 0],
  ['\\infty', '-\\infty', 0],
  ['x+y', 'x+z', 0],
  // tuples / points (ordered)
  ['(1, 2)', '(1,2)', 1],
  ['(2, 1)', '(1,2)', 0],
  ['(\\frac{1}{2}, 3)', '(0.5, 3)', 1],
  ['(1, 2, 3)', '(1,2)', 0],
  ['(1, 2)', '\\{1,2\\}', 0],
  ['[1, 2]', '(1,2)', 0],
  ['(\\sqrt{4}, -1)', '(2,-1)', 1],
  // intervals (brackets matter)
  ['[1, 2)', '[1,2)', 1],
  ['(1, 2]', '[1,2)', 0],
  ['[0, \\infty)', '[0,\\infty)', 1],
  ['(-\\infty, 2) \\cup (3, \\infty)', '(3,\\infty)\\cup(-\\infty,2)', 1],
  ['(-\\infty, 2] \\cup (3, \\infty)', '(-\\infty,2)\\cup(3,\\infty)', 0],
  // sets and lists (order-free)
  ['\\{1, 2\\}', '\\{2, 1\\}', 1],
  ['\\{1, 2\\}', '\\{1, 3\\}', 0],
  ['\\{1, 2, 3\\}', '\\{1, 2\\}', 0],
  ['3, 1, 2', '1, 2, 3', 1],
  ['1, 2', '\\{1,2\\}', 1],
  ['\\{\\frac12, 2\\}', '\\{2, 0.5\\}', 1],
  ['\\{3\\}', '3', 1],
  ['-2, 2', '\\pm 2', 0],
  // multiple choice
  ['\\text{(C)}', 'C', 1],
  ['(B)', 'C', 0],
  ['\\textbf{(A)}', '(A)', 1],
];

/** Whole responses: which box is read. */
const RESPONSES: [string, string, 0 | 1][] = [
  ['The answer is \\boxed{7}.', '7', 1],
  ['First \\boxed{3}, then corrected: \\boxed{7}', '7', 1],
  ['First \\boxed{7}, then corrected: \\boxed{3}', '7', 0],
  ['<think>maybe \\boxed{5}</think>The answer is \\boxed{6}.', '6', 1],
  ['<think>it is \\boxed{6}</think>The answer is \\boxed{5}.', '6', 0],
  ['<think>only thought \\boxed{6}</think>no box after', '6', 0],
  ['\\fbox{42}', '42', 1],
  ['so \\boxed 9 is it', '9', 1],
  ['nested \\boxed{\\frac{\\sqrt{3}}{2}}', '\\frac{\\sqrt3}{2}', 1],
  ['The answer is 7.', '7', 0],
  ['truncated \\boxed{\\frac{1}{2', '\\frac12', 0],
  ['\\boxed{}', '1', 0],
  ['reference boxed too: \\boxed{4}', '\\boxed{4}', 1],
];

describe('gradeMath', () => {
  afterAll(() => closeSharedSymbolicChecker());

  it('has at least 100 answer pairs, both equivalent and not', () => {
    expect(BOXED.length + RESPONSES.length).toBeGreaterThanOrEqual(100);
    expect(BOXED.filter((c) => c[2] === 1).length).toBeGreaterThan(40);
    expect(BOXED.filter((c) => c[2] === 0).length).toBeGreaterThan(30);
  });

  // The first symbolic check loads the engine's libraries outside the budget: a tight budget still suffices.
  it('does not charge the engine start-up to the first check', async () => {
    expect((await gradeMath('\\boxed{\\sqrt{8}}', '2\\sqrt{2}', { timeoutMs: 300 })).reward).toBe(1);
  });

  for (const [got, ref, want] of BOXED) {
    it(`\\boxed{${got}} vs ${ref} -> ${want}`, async () => {
      const g = await gradeMath(`Reasoning... so the answer is \\boxed{${got}}.`, ref, { timeoutMs: 5000 });
      expect({ reward: g.reward, reason: g.reason }).toEqual({ reward: want, reason: g.reason });
      expect(g.reason.length).toBeGreaterThan(0);
    });
  }

  for (const [response, ref, want] of RESPONSES) {
    it(`response ${JSON.stringify(response)} vs ${ref} -> ${want}`, async () => {
      expect((await gradeMath(response, ref, { timeoutMs: 5000 })).reward).toBe(want);
    });
  }

  it('says why it gave 0', async () => {
    expect((await gradeMath('The answer is 7.', '7')).reason).toMatch(/no \\boxed/);
    expect((await gradeMath('\\boxed{\\frac{1}{2', '1')).reason).toMatch(/unbalanced/);
    expect((await gradeMath('\\boxed{}', '1')).reason).toMatch(/empty/);
    expect((await gradeMath('\\boxed{3}', '4')).reason).toMatch(/not equal/);
  });

  it('names the method that found equality', async () => {
    expect((await gradeMath('\\boxed{0.5}', '\\frac12')).reason).toMatch(/numeric/);
    expect((await gradeMath('\\boxed{\\sqrt{8}}', '2\\sqrt2', { timeoutMs: 5000 })).reason).toMatch(/symbolic/);
    expect((await gradeMath('\\boxed{\\{2,1\\}}', '\\{1,2\\}')).reason).toMatch(/order-free/);
  });

  it('gives up on a symbolic check after its time limit, and says so', async () => {
    const g = await gradeMath('\\boxed{\\sum_{n=1}^{10000000} \\frac{1}{n^2}}', '\\frac{\\pi^2}{6}', { timeoutMs: 300 });
    expect(g.reward).toBe(0);
    expect(g.reason).toMatch(/timed out after 300 ms/);
  });

  it('uses about 1 s by default', async () => {
    const g = await gradeMath('\\boxed{\\sum_{n=1}^{10000000} \\frac{1}{n^2}}', '\\frac{\\pi^2}{6}');
    expect(g.reason).toMatch(/timed out after 1000 ms/);
  });

  // compute-engine does not stop inside these evaluations (9^{9^{9}} ran for minutes, 10^{10^{8}} for
  // 32 s with a 100 ms limit): the worker is terminated at the limit and replaced for the next check.
  // The test's own timeout is what fails when the limit is not enforced.
  it('enforces the limit on evaluations compute-engine cannot interrupt, and replaces the worker', { timeout: 30_000 }, async () => {
    const checker = new SymbolicChecker();
    try {
      await checker.warm();
      for (const [boxed, ms] of [['9^{9^{9}}', 200], ['10^{10^{8}}', 100]] as const) {
        const g = await gradeMath(`\\boxed{${boxed}}`, '1', { timeoutMs: ms, checker });
        expect(g.reward).toBe(0);
        expect(g.reason).toMatch(new RegExp(`timed out after ${ms} ms`));
      }
      expect(checker.killed).toBe(2);
      // A fresh worker grades the next answer.
      expect((await gradeMath('\\boxed{\\sqrt{8}}', '2\\sqrt{2}', { timeoutMs: 5000, checker })).reward).toBe(1);
      expect(checker.started).toBe(3);
    } finally {
      checker.close();
    }
  });

  it("never blocks the caller's event loop during a symbolic check", { timeout: 30_000 }, async () => {
    const checker = new SymbolicChecker();
    try {
      await checker.warm();
      const order: string[] = [];
      const timer = new Promise<void>((resolve) => setTimeout(() => {
        order.push('timer');
        resolve();
      }, 1));
      const grade = gradeMath('\\boxed{9^{9^{9}}}', '1', { timeoutMs: 2000, checker }).then((g) => {
        order.push('grade');
        return g;
      });
      await Promise.all([timer, grade]);
      expect(order).toEqual(['timer', 'grade']);
    } finally {
      checker.close();
    }
  });

  it('never throws on malformed responses', async () => {
    const nasty = ['\\frac{}{}', '\\sqrt{}', '\\}', '{{{{{{1}}}}}}', '0/0', '-', '()', '\\{\\}', '(,)', ',,,', '\\left(', 'x=', '==',
      '\\cup\\cup', '1,000,', '\\$', '%', '\\text{', '^', '_', '\\\\', '&', '\\begin{pmatrix}1&2\\end{pmatrix}', 'x\\in', '1.2.3',
      '9'.repeat(500), '(1,2', 'a=b=c', '\\pm', 'NaN', '__proto__'];
    for (const a of nasty) {
      for (const ref of ['3', '(1,2)', 'x+1']) {
        for (const response of [`\\boxed{${a}}`, a, `\\boxed ${a}`]) {
          const g = await gradeMath(response, ref, { timeoutMs: 2000 });
          expect(g.reward).toBe(0);
        }
      }
    }
  });

  it('rejects an empty reference answer as unusable input', async () => {
    await expect(gradeMath('\\boxed{1}', '  ')).rejects.toThrow(MathAnswerError);
    await expect(gradeMath('\\boxed{1}', '\\$')).rejects.toThrow(/reference answer/);
  });
});

describe('extractBoxed / normalizeAnswer', () => {
  it('extracts the last balanced box after </think>', () => {
    expect(extractBoxed('a \\boxed{1} b \\boxed{\\frac{2}{3}}')).toBe('\\frac{2}{3}');
    expect(extractBoxed('<think>\\boxed{1}</think> none')).toBeNull();
    expect(extractBoxed('\\boxed{\\{1,2\\}}')).toBe('\\{1,2\\}');
  });

  it('is idempotent on every table answer', () => {
    for (const [got, ref] of BOXED) {
      for (const s of [got, ref]) expect(normalizeAnswer(normalizeAnswer(s))).toBe(normalizeAnswer(s));
    }
  });
});
