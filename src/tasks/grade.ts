// One entry point for the episode reward of a task: math -> gradeMath, code -> gradeCode (sandbox).

import { gradeCode, type GradeCodeOptions } from './code/grade.ts';
import { gradeMath, type MathGradeOptions } from './math/grade.ts';
import type { Grade, Task } from './types.ts';

export class TaskGradeError extends Error {
  override name = 'TaskGradeError';
}

export interface GradeTaskOptions {
  math?: MathGradeOptions;
  code?: GradeCodeOptions;
}

export async function gradeTask(task: Task, response: string, opts: GradeTaskOptions = {}): Promise<Grade> {
  if (task.kind === 'math') {
    if (task.answer === undefined) throw new TaskGradeError(`task ${task.id}: math task without an answer`);
    return gradeMath(response, task.answer, opts.math);
  }
  if (!task.tests || task.tests.length === 0) throw new TaskGradeError(`task ${task.id}: code task without tests`);
  const g = await gradeCode(response, task.tests, opts.code);
  return { reward: g.reward, reason: g.reason };
}
