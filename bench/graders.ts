// How fast the reward graders answer and how closely they keep their time limits (moved here from the
// tests, which no longer assert durations): the code sandbox stopping a loop, a sleep and a C loop
// (terminated worker), a correct program's grade; the math grader's symbolic check, and a check
// compute-engine cannot interrupt (9^{9^{9}}) ending at its limit (overshoot = elapsed - limit).
import type { Gpu } from '../src/gpu/gpu.ts';
import { gradeCode } from '../src/tasks/code/grade.ts';
import { CodeSandbox } from '../src/tasks/code/sandbox.ts';
import { gradeMath } from '../src/tasks/math/grade.ts';
import { SymbolicChecker } from '../src/tasks/math/symbolic-host.ts';
import type { CodeTest } from '../src/tasks/types.ts';
import { type BenchRow, benchRow } from './results.ts';

const fence = (code: string) => `\`\`\`python\n${code}\n\`\`\``;

async function ms(f: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await f();
  return performance.now() - t0;
}

export async function benchGraders(gpu: Gpu, opts: { quick: boolean; filter?: string }): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const want = (name: string) => !opts.filter || name.includes(opts.filter);
  const limit = 1000;
  if (want('math')) {
    const checker = new SymbolicChecker();
    try {
      rows.push(benchRow(gpu, 'math symbolic worker start', await ms(() => checker.warm()), 'ms'));
      rows.push(benchRow(gpu, 'math symbolic grade sqrt(8) = 2 sqrt(2)', await ms(() => gradeMath('\\boxed{\\sqrt{8}}', '2\\sqrt{2}', { timeoutMs: 10_000, checker })), 'ms'));
      const hard = 200;
      rows.push(benchRow(gpu, `math 9^{9^{9}} overshoot past a ${hard} ms limit`, (await ms(() => gradeMath('\\boxed{9^{9^{9}}}', '1', { timeoutMs: hard, checker }))) - hard, 'ms'));
    } finally {
      checker.close();
    }
  }
  if (want('code')) {
    const sandbox = new CodeSandbox({ workers: 1, graceMs: 1500 });
    try {
      await sandbox.warm();
      const t: CodeTest[] = [{ type: 'stdin', input: '', output: '1' }];
      const cases: [string, string][] = [
        ['code loop stop past a 1000 ms limit', 'while True:\n    pass'],
        ['code time.sleep stop past a 1000 ms limit', 'import time\ntime.sleep(60)\nprint(1)'],
        ['code C loop (terminated) past a 1000 ms limit', 'print(sum(range(10**13)))'],
      ];
      for (const [name, code] of cases) {
        rows.push(benchRow(gpu, `${name} (overshoot)`, (await ms(() => gradeCode(fence(code), t, { sandbox, perTestTimeoutMs: limit }))) - limit, 'ms'));
        await sandbox.warm();
      }
      const sum: CodeTest[] = [{ type: 'stdin', input: '2 3\n', output: '5\n' }];
      rows.push(benchRow(gpu, 'code correct program grade', await ms(() => gradeCode(fence('a, b = map(int, input().split())\nprint(a + b)'), sum, { sandbox })), 'ms'));
    } finally {
      await sandbox.close();
    }
  }
  return rows;
}
