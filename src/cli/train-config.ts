// Training configuration from the command line: a preset (the study's settings, or sizes for a CPU-only
// machine), then --config FILE (a JSON object of TrainerConfig fields, merged deeply), then flags.
// What a run was started with is saved in RUNDIR/config.json, so --resume needs nothing else.
import { readFile } from 'node:fs/promises';
import { LINEAR_MODULES } from '../model/adapter.ts';
import { ADVANTAGE_MODES } from '../rl/advantages.ts';
import { LOSS_AGG_MODES } from '../rl/loss.ts';
import { STUDY_CONFIG, type TrainerConfig } from '../rl/trainer.ts';
import { ROLE_TYPES, WORKFLOW_NAMES, type RoleType, type WorkflowName } from '../workflows/types.ts';
import { numberOption } from './args.ts';
import { UsageError } from './command.ts';

type Base = Omit<TrainerConfig, 'workflow' | 'policy' | 'taskName' | 'modelName'>;

/**
 * Small sizes for a CPU-only machine and the demo model: Voting / isolated takes about 3-4 minutes on 2
 * CPU cores under lavapipe and raises validation accuracy by about 0.2 (public/demo-model/README.md).
 * Validation samples at the training temperature, 64 held-out tasks x 2 (128 episodes, so a change of
 * 0.1 is out of reach of noise); the learning rate is high for LoRA because the run is short.
 */
export const SMALL_CONFIG: Base = {
  ...STUDY_CONFIG,
  steps: 16,
  batchTasks: 4,
  groupSize: 8,
  sampling: { temperature: 1, topP: 1, maxNewTokens: 48 },
  validation: { every: 8, tasks: 64, temperature: 1, samples: 2 },
  lr: 5e-3,
  warmupSteps: 0,
  lora: { rank: 8, alpha: 16, targets: [...LINEAR_MODULES] },
  update: { ...STUDY_CONFIG.update, microBatchTokens: 4096 },
  samplesPerStep: 2,
};

export const PRESETS: Record<string, Base> = { study: STUDY_CONFIG, small: SMALL_CONFIG };

/** The arguments that pick model and tasks (not part of TrainerConfig; saved with it for --resume). */
export interface RunArgs {
  model: string;
  dtype?: string;
  task: string;
  data?: string;
  checkpointEvery: number;
}

export interface SavedRunConfig {
  format: 'troupe-run-1';
  args: RunArgs;
  trainer: TrainerConfig;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Deep merge of plain objects; arrays and scalars replace. Unknown keys are errors naming the path. */
export function mergeConfig<T>(base: T, over: unknown, where: string, path = ''): T {
  if (!isObject(over)) throw new UsageError(`${where}: ${path || 'the config'} must be a JSON object`);
  const out = { ...(base as Record<string, unknown>) };
  for (const [k, v] of Object.entries(over)) {
    const key = path ? `${path}.${k}` : k;
    if (!(k in out)) throw new UsageError(`${where}: unknown field ${key} (known: ${Object.keys(out).join(', ')})`);
    const cur = out[k];
    if (isObject(cur)) out[k] = mergeConfig(cur, v, where, key);
    else {
      if (cur !== undefined && typeof cur !== typeof v) throw new UsageError(`${where}: ${key} must be a ${Array.isArray(cur) ? 'list' : typeof cur}, got ${JSON.stringify(v)}`);
      out[k] = v;
    }
  }
  return out as T;
}

export interface TrainFlags {
  workflow?: string;
  policy?: string;
  preset?: string;
  config?: string;
  steps?: string;
  'group-size'?: string;
  'batch-tasks'?: string;
  'max-new-tokens'?: string;
  lr?: string;
  seed?: string;
  temperature?: string;
  'validate-every'?: string;
  'val-tasks'?: string;
  'val-samples'?: string;
  'val-temperature'?: string;
  'lora-rank'?: string;
  'lora-alpha'?: string;
  frozen?: string;
  'group-key'?: string;
  advantage?: string;
  agg?: string;
}

export const TRAIN_FLAG_OPTIONS = {
  workflow: { type: 'string' },
  policy: { type: 'string' },
  preset: { type: 'string' },
  config: { type: 'string' },
  steps: { type: 'string' },
  'group-size': { type: 'string' },
  'batch-tasks': { type: 'string' },
  'max-new-tokens': { type: 'string' },
  lr: { type: 'string' },
  seed: { type: 'string' },
  temperature: { type: 'string' },
  'validate-every': { type: 'string' },
  'val-tasks': { type: 'string' },
  'val-samples': { type: 'string' },
  'val-temperature': { type: 'string' },
  'lora-rank': { type: 'string' },
  'lora-alpha': { type: 'string' },
  frozen: { type: 'string' },
  'group-key': { type: 'string' },
  advantage: { type: 'string' },
  agg: { type: 'string' },
} as const;

export const TRAIN_FLAG_USAGE = [
  '  --workflow NAME           single | eval-opt | voting | orch-workers (default voting)',
  '  --policy shared|isolated  one adapter for all roles, or one per role type (default isolated)',
  '  --preset study|small      the study\'s settings (64 tasks x 8, 500 steps) or CPU-sized ones (default small)',
  '  --config FILE             JSON object of trainer fields, merged over the preset (e.g. {"update":{"miniBatches":2}})',
  '  --steps N  --batch-tasks B  --group-size G  --max-new-tokens N  --lr X  --seed S  --temperature T',
  '  --validate-every K        validation on held-out tasks every K steps (and before the first)',
  '  --val-tasks N             validation tasks per pass',
  '  --val-temperature T       validation sampling temperature (0: greedy)  --val-samples K  rollouts per validation task',
  '  --lora-rank R --lora-alpha A',
  '  --frozen ROLE[,ROLE]      roles that keep the base model (not trained)',
  '  --group-key task-slot-turn|task-role   GRPO groups (default task-slot-turn, as the study)',
  `  --advantage ${ADVANTAGE_MODES.join('|')}       (r - mean)/(std + 1e-6), r - mean (Dr. GRPO), or r`,
  `  --agg MODE                loss aggregation: ${LOSS_AGG_MODES.join(', ')}`,
];

/** Preset, config file and flags -> a TrainerConfig (names of model and task filled in by the caller). */
export async function trainerConfig(command: string, f: TrainFlags, names: { taskName: string; modelName: string }): Promise<TrainerConfig> {
  const preset = PRESETS[f.preset ?? 'small'];
  if (!preset) throw new UsageError(`troupe ${command}: unknown --preset ${f.preset} (known: ${Object.keys(PRESETS).join(', ')})`);
  const workflow = (f.workflow ?? 'voting') as WorkflowName;
  if (!WORKFLOW_NAMES.includes(workflow)) throw new UsageError(`troupe ${command}: unknown --workflow ${f.workflow} (one of ${WORKFLOW_NAMES.join(', ')})`);
  const policy = f.policy ?? 'isolated';
  if (policy !== 'shared' && policy !== 'isolated') throw new UsageError(`troupe ${command}: --policy must be shared or isolated, got ${f.policy}`);
  let c: TrainerConfig = { ...structuredClone(preset), workflow, policy, ...names };
  if (f.config !== undefined) {
    let json: unknown;
    try {
      json = JSON.parse(await readFile(f.config, 'utf8'));
    } catch (e) {
      throw new UsageError(`troupe ${command}: --config ${f.config}: ${(e as Error).message}`);
    }
    c = mergeConfig(c, json, `--config ${f.config}`);
  }
  const int = (name: string, text: string | undefined, fallback: number) => {
    const v = numberOption(command, name, text, fallback);
    if (!Number.isInteger(v) || v < 1) throw new UsageError(`troupe ${command}: --${name} must be a positive integer, got ${text}`);
    return v;
  };
  c.steps = int('steps', f.steps, c.steps);
  c.batchTasks = int('batch-tasks', f['batch-tasks'], c.batchTasks);
  c.groupSize = int('group-size', f['group-size'], c.groupSize);
  c.sampling.maxNewTokens = int('max-new-tokens', f['max-new-tokens'], c.sampling.maxNewTokens);
  c.sampling.temperature = numberOption(command, 'temperature', f.temperature, c.sampling.temperature);
  c.lr = numberOption(command, 'lr', f.lr, c.lr);
  c.seed = numberOption(command, 'seed', f.seed, c.seed);
  if (!Number.isInteger(c.seed) || c.seed < 0) throw new UsageError(`troupe ${command}: --seed must be an integer >= 0`);
  c.validation.every = int('validate-every', f['validate-every'], c.validation.every);
  c.validation.tasks = int('val-tasks', f['val-tasks'], c.validation.tasks);
  c.validation.samples = int('val-samples', f['val-samples'], c.validation.samples ?? 1);
  c.validation.temperature = numberOption(command, 'val-temperature', f['val-temperature'], c.validation.temperature);
  if (!(c.validation.temperature >= 0)) throw new UsageError(`troupe ${command}: --val-temperature must be >= 0`);
  c.lora = { ...c.lora, rank: int('lora-rank', f['lora-rank'], c.lora.rank), alpha: numberOption(command, 'lora-alpha', f['lora-alpha'], c.lora.alpha) };
  if (f.frozen !== undefined) {
    const roles = f.frozen.split(',').map((s) => s.trim()).filter(Boolean);
    const bad = roles.find((r) => !(ROLE_TYPES as readonly string[]).includes(r));
    if (bad) throw new UsageError(`troupe ${command}: --frozen: unknown role ${bad} (roles: ${ROLE_TYPES.join(', ')})`);
    c.frozenRoles = roles as RoleType[];
  }
  if (f['group-key'] !== undefined) {
    if (f['group-key'] !== 'task-slot-turn' && f['group-key'] !== 'task-role') throw new UsageError(`troupe ${command}: --group-key must be task-slot-turn or task-role`);
    c.groupKey = f['group-key'];
  }
  if (f.advantage !== undefined) {
    if (!(ADVANTAGE_MODES as readonly string[]).includes(f.advantage)) throw new UsageError(`troupe ${command}: --advantage must be one of ${ADVANTAGE_MODES.join(', ')}`);
    c.advantage = { ...c.advantage, mode: f.advantage as (typeof ADVANTAGE_MODES)[number] };
  }
  if (f.agg !== undefined) {
    if (!(LOSS_AGG_MODES as readonly string[]).includes(f.agg)) throw new UsageError(`troupe ${command}: --agg must be one of ${LOSS_AGG_MODES.join(', ')}`);
    c.update = { ...c.update, loss: { ...c.update.loss, agg: f.agg as (typeof LOSS_AGG_MODES)[number], normLength: c.update.loss.normLength ?? c.sampling.maxNewTokens } };
  }
  return c;
}
