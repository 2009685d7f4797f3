// Single agent (SA-RL, the baseline of every cell): one generator turn; its output is graded.
import type { Task } from '../tasks/types.ts';
import { noAnswerViolation, problemText, SOLVE, user } from './common.ts';
import type { Agent, EpisodeOutcome, Workflow } from './types.ts';

/** Every prompt of this workflow, per task kind: the user message of each role's turn. */
export const PROMPTS = {
  math: {
    generator: (a: { problem: string }) => `${SOLVE.math}\n\n${a.problem}`,
  },
  code: {
    generator: (a: { problem: string }) => `${SOLVE.code}\n\n${a.problem}`,
  },
} as const;

async function run(task: Task, agent: Agent): Promise<EpisodeOutcome> {
  const kind = task.kind;
  const reply = await agent.turn({
    role: 'generator',
    slot: 'generator',
    turn: 0,
    messages: user(PROMPTS[kind].generator({ problem: problemText(task) })),
  });
  return {
    final: reply.text,
    finalRole: 'generator',
    answers: [{ role: 'generator', slot: 'generator', text: reply.text }],
    violations: noAnswerViolation(kind, 'generator', 'generator', 0, 0, reply.text),
  };
}

export const singleWorkflow: Workflow = { name: 'single', roles: ['generator'], run };
