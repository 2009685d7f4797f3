// What a training run writes to RUNDIR/metrics.jsonl, one JSON object a line: a `run` header, then a
// `step` record per step and a `validation` record every K steps (and before the first step). Per-role
// fields are keyed by role type (Voting's generator0..2 are one 'generator' entry), under shared and
// isolated policies alike. The README documents this schema; the report and the browser app read it.
import type { RoleType, WorkflowName } from '../workflows/types.ts';

export type PolicySharing = 'shared' | 'isolated';

export interface RunRecord {
  type: 'run';
  version: 1;
  startedAt: string;
  workflow: WorkflowName;
  policy: PolicySharing;
  task: string;
  model: string;
  /** Role type -> adapter name (null: frozen, the base model). */
  adapters: Record<string, string | null>;
  config: Record<string, unknown>;
  runtime: { name: string; adapter: string; cpuDriver: boolean };
  /** Where the tasks came from; for a dataset also its rows and the bad rows skipped, per reason. */
  tasks?: { description: string; train: number; validation: number; rows?: number; bad?: number; badByReason?: Record<string, number> };
}

export interface RoleStepMetrics {
  /** Trajectories (role turns) of this role in the step. */
  turns: number;
  /** Mean reward of its turns. */
  reward: number;
  /** Accuracy of this role's own graded outputs (generator/worker solutions, the aggregator's pick when a
   * correct candidate existed, the evaluator's verdict, the synthesizer's answer); null when it has none. */
  accuracy: number | null;
  responseLength: { mean: number; max: number };
  /** Fraction of turns cut at max_new_tokens. */
  truncatedFrac: number;
  /** Mean token entropy of softmax(logits/T) in the training forward. */
  entropy: number;
  /** exp(mean token NLL) of its responses under the policy before the update (the study's training_ppl). */
  perplexity: number;
  /** Mean log(π/π_old) over its tokens (0 at one epoch and one mini-batch) and verl's ppo_kl. */
  logRatio: number;
  clipFrac: number;
  clipFracLower: number;
  /** L2 norm of this role's gradient before clipping: its adapter's under isolated, its own contribution
   * (measured before the sum over roles) under shared. null for frozen roles. */
  gradNorm: number | null;
  /** Response tokens trained on. */
  tokens: number;
  /** Σ over tokens of |advantage|: the gradient pressure this role puts on its adapter. */
  gradMass: number;
  /** Fraction of its turns that broke the role's format (aggregator not answering \boxed{N}, ...). */
  formatViolationRate: number;
  /** Mean |logp_rollout − logp_train| over its tokens: rollout engine vs training forward drift. */
  drift: number;
  advantage: { mean: number; absMean: number; zeroFrac: number };
}

export interface AdapterStepMetrics {
  gradNorm: number;
  clipCoef: number;
  skipped: boolean;
  lr: number;
}

export interface StepRecord {
  type: 'step';
  step: number;
  time: string;
  /** Mean episode reward and the fraction of episodes rewarded 1. */
  reward: number;
  accuracy: number;
  episodes: number;
  trajectories: number;
  roles: Partial<Record<RoleType, RoleStepMetrics>>;
  adapters: Record<string, AdapterStepMetrics>;
  /** Steps skipped so far (non-finite loss or gradient). */
  skippedSteps: number;
  timings: { rolloutMs: number; rewardMs: number; updateMs: number; stepMs: number };
  memory: { liveBytes: number; peakBytes: number };
}

export interface RoleValidationMetrics {
  turns: number;
  accuracy: number | null;
  formatViolationRate: number;
  responseLength: number;
}

export interface ValidationRecord {
  type: 'validation';
  step: number;
  time: string;
  tasks: number;
  /** Rollouts per task (1 when greedy). */
  samples?: number;
  /** Fraction of validation episodes whose final answer is correct. */
  accuracy: number;
  roles: Partial<Record<RoleType, RoleValidationMetrics>>;
}

export type MetricsRecord = RunRecord | StepRecord | ValidationRecord;

/** RUNDIR/samples.jsonl: a few whole episodes per step (and per validation), for trajectory viewers. */
export interface SampleRecord {
  type: 'sample';
  step: number;
  split: 'train' | 'validation';
  episode: number;
  taskId: string;
  task: string;
  reward: number;
  turns: {
    role: RoleType;
    slot: string;
    turn: number;
    /** The last user message the role saw. */
    prompt: string;
    response: string;
    finishReason: string;
    advantage: number | null;
    violation: string | null;
  }[];
}
