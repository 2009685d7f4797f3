// The math grader in headless Chromium: its symbolic check in a module Web Worker (from the embedded
// worker text), terminated at the time limit for evaluations compute-engine cannot interrupt.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBrowser, type Browser } from './browser.ts';
import type { MathPageCase } from './pages/math-grade.ts';

describe('browser (Chromium): math grader', () => {
  let browser: Browser | undefined;
  beforeAll(async () => {
    browser = await startBrowser();
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('checks symbolically in a Web Worker and enforces the limit there', async () => {
    const cases: MathPageCase[] = [
      { response: '\\boxed{\\sqrt{8}}', answer: '2\\sqrt{2}', timeoutMs: 10_000 },
      { response: '\\boxed{9^{9^{9}}}', answer: '1', timeoutMs: 300 },
      { response: '\\boxed{x^2+2x+1}', answer: '(x+1)^2', timeoutMs: 10_000 },
    ];
    const out = await browser!.run<{ grades: { reward: number; reason: string }[]; started: number; killed: number; timerRanFirst: boolean }>('test/e2e/pages/math-grade.ts', cases);
    expect(out.grades.map((g) => g.reward)).toEqual([1, 0, 1]);
    expect(out.grades[0]!.reason).toMatch(/symbolic/);
    expect(out.grades[1]!.reason).toMatch(/timed out after 300 ms/);
    expect(out.timerRanFirst).toBe(true);
    expect([out.started, out.killed]).toEqual([2, 1]);
    expect(browser!.errors).toEqual([]);
  });
});
