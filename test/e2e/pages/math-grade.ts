// Page module for browser-math-grade.test.ts: grades math answers in the page; the symbolic check runs in
// a module Web Worker started from the embedded worker text (src/tasks/math/symbolic-host.ts).
import { gradeMath } from '../../../src/tasks/math/grade.ts';
import { SymbolicChecker } from '../../../src/tasks/math/symbolic-host.ts';

export interface MathPageCase {
  response: string;
  answer: string;
  timeoutMs: number;
}

export default async function run(cases: MathPageCase[]): Promise<{ grades: { reward: number; reason: string }[]; started: number; killed: number; timerRanFirst: boolean }> {
  const checker = new SymbolicChecker();
  try {
    await checker.warm();
    const grades: { reward: number; reason: string }[] = [];
    let timerRanFirst = false;
    for (const c of cases) {
      let timer = false;
      const t = setTimeout(() => (timer = true), 1);
      const g = await gradeMath(c.response, c.answer, { timeoutMs: c.timeoutMs, checker });
      clearTimeout(t);
      if (c.timeoutMs <= 500) timerRanFirst = timer;
      grades.push({ reward: g.reward, reason: g.reason });
    }
    return { grades, started: checker.started, killed: checker.killed, timerRanFirst };
  } finally {
    checker.close();
  }
}
