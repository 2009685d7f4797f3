// Voting: VOTERS generators solve in parallel (slots generator0..2, separate GRPO groups); the aggregator
// sees them as `--- Solution i ---` blocks and answers \boxed{N}. The chosen candidate is graded.
// Choice fallbacks (parseChoice): the last box's integer, then the first digit 1-9, then candidate 1.
import type { Task } from '../tasks/types.ts';
import { noAnswerViolation, problemText, SOLVE, solutionBlocks, user } from './common.ts';
import { parseChoice, VIOLATION_KINDS } from './parse.ts';
import type { Agent, EpisodeOutcome, FormatViolation, RoleAnswer, Workflow } from './types.ts';

export const VOTERS = 3;
/** The aggregator only names a candidate. */
export const AGGREGATOR_MAX_NEW_TOKENS = 256;

/** Every prompt of this workflow, per task kind: the user message of each role's turn. */
export const PROMPTS = {
  math: {
    generator: (a: { problem: string }) => `${SOLVE.math}\n\n${a.problem}`,
    aggregator: (a: { problem: string; solutions: string }) =>
      `Which solution is correct? Answer \\boxed{N}, N its number.\n\nProblem:\n${a.problem}\n\n${a.solutions}`,
  },
  code: {
    generator: (a: { problem: string }) => `${SOLVE.code}\n\n${a.problem}`,
    aggregator: (a: { problem: string; solutions: string }) =>
      `Which program is correct? Answer \\boxed{N}, N its number.\n\nProblem:\n${a.problem}\n\n${a.solutions}`,
  },
} as const;

async function run(task: Task, agent: Agent): Promise<EpisodeOutcome> {
  const kind = task.kind;
  const P = PROMPTS[kind];
  const problem = problemText(task);
  const slots = Array.from({ length: VOTERS }, (_, i) => `generator${i}`);
  const content = P.generator({ problem });
  const replies = await Promise.all(slots.map((slot) => agent.turn({ role: 'generator', slot, turn: 0, messages: user(content) })));
  const answers: RoleAnswer[] = replies.map((r, i) => ({ role: 'generator', slot: slots[i]!, text: r.text }));
  const violations: FormatViolation[] = answers.flatMap((a) => noAnswerViolation(kind, 'generator', a.slot, 0, 0, a.text));

  const agg = await agent.turn({
    role: 'aggregator',
    slot: 'aggregator',
    turn: 0,
    messages: user(P.aggregator({ problem, solutions: solutionBlocks(answers.map((a) => a.text)) })),
    maxNewTokens: AGGREGATOR_MAX_NEW_TOKENS,
  });
  const choice = parseChoice(agg.text, answers.length);
  if (choice.parsedBy !== 'boxed') violations.push({ role: 'aggregator', slot: 'aggregator', turn: 0, occurrence: 0, kind: VIOLATION_KINDS.aggregatorNoBoxedChoice });
  return {
    final: answers[choice.index]!.text,
    finalRole: 'generator',
    answers,
    choice: { slot: 'aggregator', index: choice.index, parsedBy: choice.parsedBy },
    violations,
  };
}

export const votingWorkflow: Workflow = { name: 'voting', roles: ['generator', 'aggregator'], run };
