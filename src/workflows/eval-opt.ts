// Eval-Opt: the generator solves, the evaluator judges (\boxed{Correct} or \boxed{Incorrect} and a short
// critique), the generator refines on that critique; at most MAX_EVALUATIONS evaluator calls, stopping at
// the first Correct. The last generator output is graded. Group keys as the study: every generator turn
// is slot 'generator' turn 0 (one group), every evaluator turn slot 'evaluator' turn 0.
import type { Task } from '../tasks/types.ts';
import { ANSWER_FORMAT, FEEDBACK_CAP, noAnswerViolation, problemText, shownCandidate, SOLVE, user } from './common.ts';
import { evaluatorViolations, parseVerdict } from './parse.ts';
import type { Agent, EpisodeOutcome, FormatViolation, RoleAnswer, Workflow } from './types.ts';

/** Evaluator calls per episode at most (so at most as many generator calls). */
export const MAX_EVALUATIONS = 3;

const VERDICT_LINE = 'Reply \\boxed{Correct} or \\boxed{Incorrect}, then, if incorrect, say briefly what is wrong.';

/** Every prompt of this workflow, per task kind: the user message of each turn. */
export const PROMPTS = {
  math: {
    generator: (a: { problem: string }) => `${SOLVE.math}\n\n${a.problem}`,
    evaluator: (a: { problem: string; solution: string }) =>
      `Check this solution. Do not solve it yourself. ${VERDICT_LINE}\n\nProblem:\n${a.problem}\n\nSolution:\n${a.solution}`,
    refine: (a: { problem: string; solution: string; feedback: string }) =>
      `Improve your solution using the feedback. ${ANSWER_FORMAT.math}\n\nProblem:\n${a.problem}\n\nYour solution:\n${a.solution}\n\nFeedback:\n${a.feedback}`,
  },
  code: {
    generator: (a: { problem: string }) => `${SOLVE.code}\n\n${a.problem}`,
    evaluator: (a: { problem: string; solution: string }) =>
      `Check this program. Do not write code. ${VERDICT_LINE}\n\nProblem:\n${a.problem}\n\nProgram:\n${a.solution}`,
    refine: (a: { problem: string; solution: string; feedback: string }) =>
      `Improve your program using the feedback. ${ANSWER_FORMAT.code}\n\nProblem:\n${a.problem}\n\nYour program:\n${a.solution}\n\nFeedback:\n${a.feedback}`,
  },
} as const;

async function run(task: Task, agent: Agent): Promise<EpisodeOutcome> {
  const kind = task.kind;
  const P = PROMPTS[kind];
  const problem = problemText(task);
  const answers: RoleAnswer[] = [];
  const verdicts: NonNullable<EpisodeOutcome['verdicts']> = [];
  const violations: FormatViolation[] = [];

  const generate = async (content: string): Promise<string> => {
    const r = await agent.turn({ role: 'generator', slot: 'generator', turn: 0, messages: user(content) });
    violations.push(...noAnswerViolation(kind, 'generator', 'generator', 0, answers.length, r.text));
    answers.push({ role: 'generator', slot: 'generator', text: r.text });
    return r.text;
  };

  let solution = await generate(P.generator({ problem }));
  for (let round = 0; round < MAX_EVALUATIONS; round++) {
    const shown = shownCandidate(solution);
    const e = await agent.turn({ role: 'evaluator', slot: 'evaluator', turn: 0, messages: user(P.evaluator({ problem, solution: shown })) });
    const verdict = parseVerdict(e.text);
    verdicts.push({ slot: 'evaluator', turn: 0, answer: answers.length - 1, verdict });
    for (const k of evaluatorViolations(e.text)) violations.push({ role: 'evaluator', slot: 'evaluator', turn: 0, occurrence: round, kind: k });
    if (verdict === 'correct' || round === MAX_EVALUATIONS - 1) break;
    solution = await generate(P.refine({ problem, solution: shown, feedback: shownCandidate(e.text, FEEDBACK_CAP) }));
  }
  return { final: solution, finalRole: 'generator', answers, verdicts, violations };
}

export const evalOptWorkflow: Workflow = { name: 'eval-opt', roles: ['generator', 'evaluator'], run };
