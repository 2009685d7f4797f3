// The Pyodide code sandbox in headless Chromium (module Web Workers, SharedArrayBuffer interrupts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CodeTest } from '../../src/tasks/types.ts';
import { rng } from '../helpers/random.ts';
import { startBrowser, type Browser } from './browser.ts';
import type { SandboxPageCase, SandboxPageResult } from './pages/code-sandbox.ts';

const fence = (code: string) => `\`\`\`python\n${code}\n\`\`\``;

describe('browser (Chromium): code sandbox', () => {
  let browser: Browser | undefined;
  beforeAll(async () => {
    browser = await startBrowser();
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('grades correct, wrong, looping and hostile programs in Web Workers', async () => {
    const r = rng(31);
    const tests: CodeTest[] = Array.from({ length: 3 }, () => {
      const a = Math.floor(r() * 1000) - 500;
      const b = Math.floor(r() * 1000) - 500;
      return { type: 'stdin', input: `${a} ${b}\n`, output: `${a * b}\n` };
    });
    const cases: SandboxPageCase[] = [
      { response: fence('a, b = map(int, input().split())\nprint(a * b)'), tests },
      { response: fence('a, b = map(int, input().split())\nprint(a + b)'), tests },
      { response: fence('def f(xs):\n    return sorted(xs)'), tests: [{ type: 'functional', fnName: 'f', inputs: [[3, 1, 2]], output: [1, 2, 3] }] },
      { response: fence('while True:\n    pass'), tests, perTestTimeoutMs: 1000 },
      { response: fence('import js\nprint(js.document)'), tests },
      { response: fence('a, b = map(int, input().split())\nprint(a * b)'), tests },
    ];
    const out = await browser!.run<SandboxPageResult>('test/e2e/pages/code-sandbox.ts', cases);
    expect(out.crossOriginIsolated).toBe(true);
    const [ok, wrong, call, loop, hostile, again] = out.grades;
    expect(ok!.reward).toBe(1);
    expect(wrong!.reward).toBe(0);
    expect(wrong!.reason).toContain('wrong answer');
    expect(call!.reward).toBe(1);
    expect(loop!.reason).toContain('time limit (1000 ms) exceeded');
    expect(hostile!.reason).toContain("module 'js' is not available");
    expect(again!.reward).toBe(1);
    expect(browser!.errors).toEqual([]);
  });
});
