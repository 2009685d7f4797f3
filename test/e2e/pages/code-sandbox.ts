// Page module for browser-code-sandbox.test.ts: grades a few programs with the Pyodide sandbox in Web
// Workers of the page and returns the grades, for the test to check.
import { gradeCode } from '../../../src/tasks/code/grade.ts';
import { CodeSandbox } from '../../../src/tasks/code/sandbox.ts';
import type { CodeTest } from '../../../src/tasks/types.ts';

export interface SandboxPageCase {
  response: string;
  tests: CodeTest[];
  perTestTimeoutMs?: number;
}

export interface SandboxPageResult {
  crossOriginIsolated: boolean;
  grades: { reward: number; reason: string; passed: number; total: number; ms: number }[];
}

export default async function run(cases: SandboxPageCase[]): Promise<SandboxPageResult> {
  const sandbox = new CodeSandbox({ workers: 1, graceMs: 1500 });
  try {
    const grades: SandboxPageResult['grades'] = [];
    for (const c of cases) {
      const t0 = performance.now();
      const g = await gradeCode(c.response, c.tests, { sandbox, perTestTimeoutMs: c.perTestTimeoutMs });
      grades.push({ ...g, ms: Math.round(performance.now() - t0) });
    }
    return { crossOriginIsolated: globalThis.crossOriginIsolated === true, grades };
  } finally {
    await sandbox.close();
  }
}
