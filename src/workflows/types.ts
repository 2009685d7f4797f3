// The contract between workflows and whoever runs them (the GRPO trainer, evaluation, the SFT data
// teacher). A workflow is a plain async program over one task: it asks roles for turns through an
// Agent and returns what to grade. It never sees adapters, sampling settings or token ids: the Agent
// implementation binds each call to its role's policy, samples, and records the turn as a trajectory.
import type { ChatMessage } from '../model/tokenizer.ts';
import type { Task } from '../tasks/types.ts';

/** Role types: under isolated policies each type has its own adapter; slots of a type share it. */
export const ROLE_TYPES = ['generator', 'evaluator', 'aggregator', 'orchestrator', 'worker', 'synthesizer'] as const;
export type RoleType = (typeof ROLE_TYPES)[number];

export const WORKFLOW_NAMES = ['single', 'eval-opt', 'voting', 'orch-workers'] as const;
export type WorkflowName = (typeof WORKFLOW_NAMES)[number];

/** One role turn a workflow asks for. */
export interface TurnRequest {
  role: RoleType;
  /** The role slot of the GRPO group key: 'generator0'..'generator2' in Voting (separate groups),
   * 'generator' for every Eval-Opt generator turn, 'worker' for all Orch-Workers workers (one group). */
  slot: string;
  /** Turn index of the group key (Eval-Opt keeps every generator turn at 0: one group, as the study). */
  turn: number;
  messages: ChatMessage[];
  /** Upper bound for this turn's response (the runner may lower it, never raise it). */
  maxNewTokens?: number;
}

export interface TurnReply {
  text: string;
  finishReason: 'stop' | 'length' | 'abort' | 'timeout';
}

/** What a workflow calls. Calls may run concurrently (Promise.all): the engine batches them. */
export interface Agent {
  turn(req: TurnRequest): Promise<TurnReply>;
}

/** A role's answer that is graded on its own, for per-role accuracy (a generator's or worker's solution). */
export interface RoleAnswer {
  role: RoleType;
  slot: string;
  /** The full response text; the task's grader extracts the answer (\boxed{} or the last code block). */
  text: string;
}

/** A role turn whose output broke its role's format; `kind` names how. */
export interface FormatViolation {
  role: RoleType;
  slot: string;
  turn: number;
  /** Which of this slot's turns with this turn index it was (0-based, in call order); absent: the last. */
  occurrence?: number;
  /** e.g. 'aggregator-no-boxed-choice', 'evaluator-wrote-code', 'evaluator-no-verdict',
   * 'orchestrator-solved', 'orchestrator-no-strategies', 'generator-no-answer'. */
  kind: string;
}

export interface EpisodeOutcome {
  /** The response graded for the episode reward. */
  final: string;
  /** Which role's output `final` is (e.g. the chosen generator under Voting, the synthesizer). */
  finalRole: RoleType;
  answers: RoleAnswer[];
  /** Voting: the aggregator's pick, an index into `answers` (for "picks a correct candidate when one exists"). */
  choice?: { slot: string; index: number; parsedBy: 'boxed' | 'digit' | 'default' };
  /** Eval-Opt: each evaluator verdict, with the index into `answers` of the solution it judged. */
  verdicts?: { slot: string; turn: number; answer: number; verdict: 'correct' | 'incorrect' | 'none' }[];
  violations: FormatViolation[];
}

export interface Workflow {
  name: WorkflowName;
  /** Role types this workflow calls, in the order they first act. */
  roles: readonly RoleType[];
  run(task: Task, agent: Agent): Promise<EpisodeOutcome>;
}
