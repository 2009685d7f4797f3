// Orch-Workers: the orchestrator proposes WORKERS strategies (`STRATEGY k:` lines) without solving; the
// workers (all slot 'worker', one GRPO group) each solve the full problem with one strategy, in
// parallel; the synthesizer compares their solutions and gives its own answer, which is graded.
// Strategy fallbacks (parseStrategies): `STRATEGY k:` markers, a numbered list, lines over 10
// characters; missing ones (fewer than WORKERS, or none) are filled from GENERIC_STRATEGIES, so an
// episode always has WORKERS workers.
import type { Task, TaskKind } from '../tasks/types.ts';
import { ANSWER_FORMAT, noAnswerViolation, problemText, solutionBlocks, user } from './common.ts';
import { orchestratorViolations, parseStrategies } from './parse.ts';
import type { Agent, EpisodeOutcome, FormatViolation, RoleAnswer, Workflow } from './types.ts';

export const WORKERS = 3;
/** The orchestrator only writes a few short lines. */
export const ORCHESTRATOR_MAX_NEW_TOKENS = 256;

/** Strategies a worker gets when the orchestrator proposed fewer than WORKERS. */
export const GENERIC_STRATEGIES: Record<TaskKind, readonly string[]> = {
  math: [
    'Work forward from the given facts, one step at a time.',
    'Start from what is asked and work backward.',
    'Try small cases first, then generalize and check.',
  ],
  code: [
    'Write the most direct solution, then check it on the example.',
    'Handle the edge cases first, then the general case.',
    'Split the task into small helper steps.',
  ],
};

const PLAN = `Give ${WORKERS} different approaches as lines STRATEGY 1: ... to STRATEGY ${WORKERS}: ...`;

/** Every prompt of this workflow, per task kind: the user message of each role's turn. */
export const PROMPTS = {
  math: {
    orchestrator: (a: { problem: string }) => `${PLAN} Do not solve it.\n\n${a.problem}`,
    worker: (a: { problem: string; strategy: string }) => `Solve step by step using this approach: ${a.strategy}\n${ANSWER_FORMAT.math}\n\n${a.problem}`,
    synthesizer: (a: { problem: string; solutions: string }) =>
      `Compare these solutions and give the correct answer. ${ANSWER_FORMAT.math}\n\nProblem:\n${a.problem}\n\n${a.solutions}`,
  },
  code: {
    orchestrator: (a: { problem: string }) => `${PLAN} Do not write code.\n\n${a.problem}`,
    worker: (a: { problem: string; strategy: string }) => `Write a Python solution using this approach: ${a.strategy}\n${ANSWER_FORMAT.code}\n\n${a.problem}`,
    synthesizer: (a: { problem: string; solutions: string }) =>
      `Compare these programs and give a correct one. ${ANSWER_FORMAT.code}\n\nProblem:\n${a.problem}\n\n${a.solutions}`,
  },
} as const;

/** The WORKERS strategies handed to workers: the parsed ones, then generic ones not already used. */
export function workerStrategies(kind: TaskKind, parsed: readonly string[]): string[] {
  const out = parsed.slice(0, WORKERS);
  for (const g of GENERIC_STRATEGIES[kind]) {
    if (out.length >= WORKERS) break;
    if (!out.includes(g)) out.push(g);
  }
  return out;
}

async function run(task: Task, agent: Agent): Promise<EpisodeOutcome> {
  const kind = task.kind;
  const P = PROMPTS[kind];
  const problem = problemText(task);
  const violations: FormatViolation[] = [];

  const orch = await agent.turn({
    role: 'orchestrator',
    slot: 'orchestrator',
    turn: 0,
    messages: user(P.orchestrator({ problem })),
    maxNewTokens: ORCHESTRATOR_MAX_NEW_TOKENS,
  });
  const parsed = parseStrategies(orch.text, WORKERS);
  for (const k of orchestratorViolations(orch.text, parsed)) violations.push({ role: 'orchestrator', slot: 'orchestrator', turn: 0, occurrence: 0, kind: k });
  const strategies = workerStrategies(kind, parsed.strategies);

  const replies = await Promise.all(
    strategies.map((strategy) => agent.turn({ role: 'worker', slot: 'worker', turn: 0, messages: user(P.worker({ problem, strategy })) })),
  );
  const answers: RoleAnswer[] = replies.map((r) => ({ role: 'worker', slot: 'worker', text: r.text }));
  answers.forEach((a, i) => violations.push(...noAnswerViolation(kind, 'worker', 'worker', 0, i, a.text)));

  const solutions = solutionBlocks(
    answers.map((a) => a.text),
    strategies.map((s) => `Approach: ${s}`),
  );
  const syn = await agent.turn({ role: 'synthesizer', slot: 'synthesizer', turn: 0, messages: user(P.synthesizer({ problem, solutions })) });
  answers.push({ role: 'synthesizer', slot: 'synthesizer', text: syn.text });
  violations.push(...noAnswerViolation(kind, 'synthesizer', 'synthesizer', 0, 0, syn.text));
  return { final: syn.text, finalRole: 'synthesizer', answers, violations };
}

export const orchWorkersWorkflow: Workflow = { name: 'orch-workers', roles: ['orchestrator', 'worker', 'synthesizer'], run };
