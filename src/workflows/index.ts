// The workflow registry. Adding a workflow: its file (exporting a Workflow), its name in WORKFLOW_NAMES
// (types.ts), and one line in REGISTRY below (the Record type makes a missing line a type error).
import { evalOptWorkflow } from './eval-opt.ts';
import { orchWorkersWorkflow } from './orch-workers.ts';
import { singleWorkflow } from './single.ts';
import { type RoleType, WORKFLOW_NAMES, type Workflow, type WorkflowName } from './types.ts';
import { votingWorkflow } from './voting.ts';

const REGISTRY: Record<WorkflowName, Workflow> = {
  single: singleWorkflow,
  'eval-opt': evalOptWorkflow,
  voting: votingWorkflow,
  'orch-workers': orchWorkersWorkflow,
};

export class UnknownWorkflowError extends Error {
  override name = 'UnknownWorkflowError';
}

/** Every workflow, in WORKFLOW_NAMES order. */
export const WORKFLOWS: readonly Workflow[] = WORKFLOW_NAMES.map((n) => REGISTRY[n]);

export function isWorkflowName(name: string): name is WorkflowName {
  return (WORKFLOW_NAMES as readonly string[]).includes(name);
}

/** The workflow called `name`; throws UnknownWorkflowError naming the known ones otherwise (e.g. a CLI typo). */
export function workflowByName(name: WorkflowName | string): Workflow {
  if (!isWorkflowName(name)) throw new UnknownWorkflowError(`unknown workflow "${name}" (known: ${WORKFLOW_NAMES.join(', ')})`);
  return REGISTRY[name];
}

/** Role types `name` calls, in the order they first act. */
export function rolesOf(name: WorkflowName | string): readonly RoleType[] {
  return workflowByName(name).roles;
}

export { PROMPTS as SINGLE_PROMPTS } from './single.ts';
export { PROMPTS as EVAL_OPT_PROMPTS } from './eval-opt.ts';
export { PROMPTS as VOTING_PROMPTS } from './voting.ts';
export { PROMPTS as ORCH_WORKERS_PROMPTS } from './orch-workers.ts';
export { ROLE_TYPES, WORKFLOW_NAMES } from './types.ts';
export type { Agent, EpisodeOutcome, FormatViolation, RoleAnswer, RoleType, TurnReply, TurnRequest, Workflow, WorkflowName } from './types.ts';
