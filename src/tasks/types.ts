// Shared task types: what a dataset row or a built-in generator yields, and what a grader returns.
// Math tasks carry an exact answer; code tasks carry test cases the sandbox (src/tasks/code/) runs.

export type TaskKind = 'math' | 'code';
export type Split = 'train' | 'validation';

/** A program reads `input` on stdin and must print `output` (compared after trimming trailing whitespace). */
export interface StdinTest {
  type: 'stdin';
  input: string;
  output: string;
}

/** `fnName(...inputs)` must return a value equal to `output` (JSON values). */
export interface FunctionalTest {
  type: 'functional';
  fnName: string;
  inputs: unknown[];
  output: unknown;
}

export type CodeTest = StdinTest | FunctionalTest;

export interface Task {
  /** Stable and unique within its source: the split hash uses it. */
  id: string;
  kind: TaskKind;
  /** The problem statement shown to the model (no chat template applied). */
  prompt: string;
  /** Math only: the reference answer (LaTeX or plain text). */
  answer?: string;
  /** Code only: test cases, all of which must pass for reward 1. */
  tests?: CodeTest[];
  /** Code only: a function signature or stub to start from (DeepCoder starter_code). */
  starterCode?: string;
  /** Where the task came from: a dataset name/path or 'builtin:<generator>'. */
  source: string;
  split: Split;
  /** Free-form extras from the row (difficulty level, data_source, reference solution, ...). */
  meta?: Record<string, unknown>;
}

/** Outcome of grading one final response: the episode reward and why. */
export interface Grade {
  reward: 0 | 1;
  reason: string;
}
