// Multi-agent GRPO, one step at a time: B tasks × G rollouts of a workflow (every role's turns in the
// same engine batches), rewards, group advantages, the update of every adapter, per-role metrics.
// The Trainer owns adapters, optimizers and the rollout engine, and does no file I/O: the CLI runner
// (src/rl/run.ts) and the browser worker write what it emits. Randomness is a function of (seed, step):
// task order, sampling streams and adapter init, so a run restored from saveState continues exactly.
import type { Gpu } from '../gpu/gpu.ts';
import { AdapterSet, type LoraConfig, LoraAdapter, DEFAULT_LORA } from '../model/lora.ts';
import { loadPeft, type PeftFiles, savePeft } from '../model/peft.ts';
import type { Qwen3Model } from '../model/qwen3.ts';
import { MemorySource } from '../model/source.ts';
import type { Qwen3Tokenizer } from '../model/tokenizer.ts';
import { AdamW } from '../optim/adamw.ts';
import { cosineWithWarmup } from '../optim/schedule.ts';
import { RolloutEngine } from '../rollout/engine.ts';
import { gradeTask } from '../tasks/grade.ts';
import type { DatasetReport } from '../tasks/data/load.ts';
import type { TaskSet } from '../tasks/source.ts';
import type { Task } from '../tasks/types.ts';
import type { GroupKey } from './advantages.ts';
import { type AdvantageOptions, grpoAdvantages } from './advantages.ts';
import { grpoUpdate, type UpdateConfig } from './grpo-update.ts';
import { RecordingAgent, type SamplingConfig, stepSeed, type Trajectory } from './trajectory.ts';
import { type GradedEpisode, stepRoleMetrics, validationRoleMetrics } from '../metrics/role-metrics.ts';
import type { MetricsRecord, PolicySharing, RunRecord, SampleRecord, StepRecord, ValidationRecord } from '../metrics/schema.ts';
import { workflowByName } from '../workflows/index.ts';
import type { RoleType, Workflow, WorkflowName } from '../workflows/types.ts';

export type GroupKeyMode = 'task-slot-turn' | 'task-role';
export type RewardMode = 'outcome' | 'own-answer';

export interface TrainerConfig {
  workflow: WorkflowName;
  policy: PolicySharing;
  /** Roles that keep the base model (no adapter, not trained). */
  frozenRoles: RoleType[];
  /** Names for the run header. */
  taskName: string;
  modelName: string;
  steps: number;
  /** Tasks per step (B) and rollouts per task (G). */
  batchTasks: number;
  groupSize: number;
  sampling: SamplingConfig;
  /** Held-out tasks every `every` steps: `samples` rollouts each at `temperature` (0: greedy, one is enough). */
  validation: { every: number; tasks: number; temperature: number; samples?: number };
  lr: number;
  warmupSteps: number;
  weightDecay: number;
  maxGradNorm: number;
  lora: LoraConfig;
  seed: number;
  groupKey: GroupKeyMode;
  advantage: AdvantageOptions;
  /** 'outcome': every turn gets the episode reward (the study); 'own-answer': turns whose output is graded
   * on its own (generator and worker solutions) get their own grade. */
  reward: RewardMode;
  update: Omit<UpdateConfig, 'temperature' | 'perRoleGradNorm'>;
  /** Whole episodes per step written as samples. */
  samplesPerStep: number;
  /** Stop the run after this many skipped (non-finite) steps in a row. */
  maxSkippedInARow: number;
  kvBudgetBytes?: number;
  /** Grading limit of one math answer. */
  gradeTimeoutMs: number;
}

/** The study's settings (seed-system.md), for a GPU server. */
export const STUDY_CONFIG: Omit<TrainerConfig, 'workflow' | 'policy' | 'taskName' | 'modelName'> = {
  frozenRoles: [],
  steps: 500,
  batchTasks: 64,
  groupSize: 8,
  sampling: { temperature: 0.7, topP: 1, maxNewTokens: 5120 },
  validation: { every: 10, tasks: 256, temperature: 0 },
  lr: 2e-5,
  warmupSteps: 15,
  weightDecay: 0.01,
  maxGradNorm: 1,
  lora: DEFAULT_LORA,
  seed: 0,
  groupKey: 'task-slot-turn',
  advantage: { mode: 'std', singleton: 'zero' },
  reward: 'outcome',
  update: { loss: { clipLow: 0.2, clipHigh: 0.28, dualClip: 3, agg: 'seq-mean-token-mean' }, miniBatches: 1, epochs: 1, microBatchTokens: 8192 },
  samplesPerStep: 2,
  maxSkippedInARow: 5,
  gradeTimeoutMs: 2000,
};

export class TrainError extends Error {
  override name = 'TrainError';
}

/** Everything a run needs to continue exactly: adapters, optimizer moments, counters. */
export interface TrainerState {
  step: number;
  skippedSteps: number;
  skippedInARow: number;
  adapters: Record<string, PeftFiles>;
  optimizers: Record<string, Uint8Array>;
}

export interface TrainerOptions {
  gpu: Gpu;
  model: Qwen3Model;
  tokenizer: Qwen3Tokenizer;
  tasks: TaskSet;
  config: TrainerConfig;
  onRecord?: (r: MetricsRecord) => void;
  onSample?: (s: SampleRecord) => void;
}

export class Trainer {
  readonly config: TrainerConfig;
  readonly workflow: Workflow;
  readonly adapters = new AdapterSet();
  readonly optimizers = new Map<string, AdamW>();
  readonly engine: RolloutEngine;
  /** Role type -> adapter name (null: frozen). */
  readonly adapterOf: Record<string, string | null> = {};
  private readonly gpu: Gpu;
  private readonly model: Qwen3Model;
  private readonly schedule: (step: number) => number;
  /** Called with every record (step, validation) and sample as it is made. */
  onRecord: ((r: MetricsRecord) => void) | undefined;
  onSample: ((s: SampleRecord) => void) | undefined;
  private stepsDone = 0;
  private skippedSteps = 0;
  private skippedInARow = 0;

  constructor(private readonly opts: TrainerOptions) {
    const c = (this.config = opts.config);
    checkConfig(c, opts.tasks);
    this.gpu = opts.gpu;
    this.onRecord = opts.onRecord;
    this.onSample = opts.onSample;
    this.model = opts.model;
    this.workflow = workflowByName(c.workflow);
    const trained = this.workflow.roles.filter((r) => !c.frozenRoles.includes(r));
    for (const role of this.workflow.roles) {
      this.adapterOf[role] = c.frozenRoles.includes(role) ? null : c.policy === 'shared' ? 'policy' : role;
    }
    const names = [...new Set(trained.map((r) => this.adapterOf[r]!))];
    names.forEach((name, k) => {
      const adapter = this.adapters.add(LoraAdapter.create(this.gpu, name, this.model.config, c.lora, { seed: stepSeed(c.seed, 0, 1000 + k) }));
      this.optimizers.set(name, new AdamW(this.gpu, adapter.parameters(), { lr: c.lr, weightDecay: c.weightDecay, maxGradNorm: c.maxGradNorm }, name));
    });
    this.engine = new RolloutEngine(this.model, opts.tokenizer, { adapters: this.adapters, kvBudgetBytes: c.kvBudgetBytes });
    for (const role of this.workflow.roles) this.engine.setRole(role, this.adapterOf[role]!);
    this.schedule = cosineWithWarmup({ lr: c.lr, warmupSteps: c.warmupSteps, totalSteps: c.steps });
  }

  /** Steps completed. */
  get step(): number {
    return this.stepsDone;
  }

  get done(): boolean {
    return this.stepsDone >= this.config.steps;
  }

  runRecord(): RunRecord {
    const r = this.gpu.report;
    return {
      type: 'run',
      version: 1,
      startedAt: new Date().toISOString(),
      workflow: this.config.workflow,
      policy: this.config.policy,
      task: this.config.taskName,
      model: this.config.modelName,
      adapters: { ...this.adapterOf },
      config: { ...this.config } as unknown as Record<string, unknown>,
      runtime: { name: r.runtime, adapter: [r.vendor, r.architecture, r.description].filter(Boolean).join(' '), cpuDriver: r.cpuDriver !== null },
      tasks: { description: this.opts.tasks.description, train: this.opts.tasks.train.length, validation: this.opts.tasks.validation.length, ...datasetCounts(this.opts.tasks.report) },
    };
  }

  /** The train tasks of a step: each epoch a seeded permutation, B at a time. */
  tasksOfStep(step: number): Task[] {
    const train = this.opts.tasks.train;
    const B = this.config.batchTasks;
    const out: Task[] = [];
    for (let k = step * B; k < (step + 1) * B; k++) {
      const epoch = Math.floor(k / train.length);
      out.push(train[permutation(train.length, stepSeed(this.config.seed, epoch, 7))[k % train.length]!]!);
    }
    return out;
  }

  /** Runs episodes of the workflow over tasks (all at once, so the engine batches every role's turns). */
  private async rollout(tasks: Task[], rolloutsPerTask: number, temperature: number, seed: number, prefix: string): Promise<GradedEpisode[]> {
    const c = this.config;
    const sampling: SamplingConfig = { ...c.sampling, temperature };
    const jobs = tasks.flatMap((task, b) =>
      Array.from({ length: rolloutsPerTask }, async (_, g) => {
        const episode = b * rolloutsPerTask + g;
        const agent = new RecordingAgent(this.engine, { episode, episodeId: `${prefix}:${episode}`, taskId: task.id, sampling, seed, adapterOf: (r) => this.adapterOf[r] ?? null });
        const outcome = await this.workflow.run(task, agent);
        return { task, outcome, trajectories: agent.trajectories.sort((x, y) => x.call - y.call) };
      }),
    );
    const ran = await Promise.all(jobs);
    return Promise.all(ran.map(async ({ task, outcome, trajectories }) => {
      const cache = new Map<string, Promise<number>>();
      const grade = (text: string) => {
        if (!cache.has(text)) cache.set(text, gradeTask(task, text, { math: { timeoutMs: c.gradeTimeoutMs } }).then((g) => g.reward));
        return cache.get(text)!;
      };
      const [reward, answerGrades] = await Promise.all([grade(outcome.final), Promise.all(outcome.answers.map((a) => grade(a.text)))]);
      markViolations(trajectories, outcome.violations);
      return { taskId: task.id, outcome, reward, answerGrades, trajectories };
    }));
  }

  private groupKey(t: Trajectory): GroupKey {
    return this.config.groupKey === 'task-role' ? { taskId: t.taskId, roleSlot: t.role, turn: 0 } : { taskId: t.taskId, roleSlot: t.slot, turn: t.turn };
  }

  /** One GRPO step: rollouts, rewards, advantages, update; emits and returns its record. */
  async trainStep(): Promise<StepRecord> {
    if (this.done) throw new TrainError(`the run has finished its ${this.config.steps} steps`);
    const c = this.config;
    const step = this.stepsDone;
    const t0 = now();
    this.gpu.memory.peakBytes = this.gpu.memory.liveBytes + this.gpu.memory.pooledBytes;
    const episodes = await this.rollout(this.tasksOfStep(step), c.groupSize, c.sampling.temperature, stepSeed(c.seed, step), String(step));
    const t1 = now();
    const trajs = episodes.flatMap((ep) => {
      ownRewards(ep, c.reward);
      return ep.trajectories;
    });
    const adv = grpoAdvantages(trajs.map((t) => ({ key: this.groupKey(t), reward: t.reward })), c.advantage);
    trajs.forEach((t, i) => (t.advantage = adv[i]!));
    const t2 = now();
    const lr = this.schedule(step);
    const update = await grpoUpdate(this.gpu, this.model, this.adapters, this.optimizers, trajs, { ...c.update, temperature: c.sampling.temperature, perRoleGradNorm: c.policy === 'shared' }, lr);
    const t3 = now();
    if (update.skipped) {
      this.skippedSteps++;
      this.skippedInARow++;
    } else {
      this.skippedInARow = 0;
    }
    this.stepsDone++;
    const rewards = episodes.map((e) => e.reward);
    const record: StepRecord = {
      type: 'step',
      step: this.stepsDone,
      time: new Date().toISOString(),
      reward: mean(rewards),
      accuracy: rewards.filter((r) => r === 1).length / rewards.length,
      episodes: episodes.length,
      trajectories: trajs.length,
      roles: stepRoleMetrics(episodes, trajs, update.perTrajectory, update.roleGradNorm),
      adapters: Object.fromEntries(Object.entries(update.adapters).map(([n, r]) => [n, { gradNorm: r.gradNorm, clipCoef: r.clipCoef, skipped: r.skipped, lr: r.lr }])),
      skippedSteps: this.skippedSteps,
      timings: { rolloutMs: t1 - t0, rewardMs: t2 - t1, updateMs: t3 - t2, stepMs: t3 - t0 },
      memory: { liveBytes: this.gpu.memory.liveBytes, peakBytes: this.gpu.memory.peakBytes },
    };
    this.onRecord?.(record);
    this.emitSamples(episodes, this.stepsDone, 'train');
    if (this.skippedInARow >= c.maxSkippedInARow) {
      throw new TrainError(`${this.skippedInARow} steps in a row had a non-finite gradient and were skipped (last: step ${this.stepsDone}); the run stops. Lower --lr or check the model for NaN/Inf`);
    }
    return record;
  }

  /** Validation on held-out tasks: one rollout each at the validation temperature (0: greedy). */
  async validate(): Promise<ValidationRecord> {
    const c = this.config;
    const tasks = this.opts.tasks.validation.slice(0, c.validation.tasks);
    if (!tasks.length) throw new TrainError('validation: the task set has no validation tasks');
    // The same sampling streams at every validation: differences between passes come from the weights.
    const samples = c.validation.temperature > 0 ? (c.validation.samples ?? 1) : 1;
    const episodes = await this.rollout(tasks, samples, c.validation.temperature, stepSeed(c.seed, 0, 99), `val${this.stepsDone}`);
    const record: ValidationRecord = {
      type: 'validation',
      step: this.stepsDone,
      time: new Date().toISOString(),
      tasks: tasks.length,
      samples,
      accuracy: episodes.filter((e) => e.reward === 1).length / episodes.length,
      roles: validationRoleMetrics(episodes),
    };
    this.onRecord?.(record);
    this.emitSamples(episodes, this.stepsDone, 'validation');
    return record;
  }

  private emitSamples(episodes: GradedEpisode[], step: number, split: 'train' | 'validation'): void {
    const onSample = this.onSample;
    if (!onSample) return;
    const tasks = new Map([...this.opts.tasks.train, ...this.opts.tasks.validation].map((t) => [t.id, t]));
    episodes.slice(0, this.config.samplesPerStep).forEach((ep, e) => {
      onSample({
        type: 'sample',
        step,
        split,
        episode: e,
        taskId: ep.taskId,
        task: tasks.get(ep.taskId)?.prompt ?? '',
        reward: ep.reward,
        turns: ep.trajectories.map((t) => ({
          role: t.role,
          slot: t.slot,
          turn: t.turn,
          prompt: t.promptText,
          response: t.text,
          finishReason: t.finishReason,
          advantage: split === 'train' ? t.advantage : null,
          violation: t.violation,
        })),
      });
    });
  }

  /** Lr of the next optimizer step. */
  get lr(): number {
    return this.schedule(Math.min(this.stepsDone, this.config.steps - 1));
  }

  async saveState(): Promise<TrainerState> {
    const adapters: Record<string, PeftFiles> = {};
    const optimizers: Record<string, Uint8Array> = {};
    for (const name of this.adapters.names) {
      adapters[name] = await savePeft(this.gpu, this.adapters.get(name), { baseModel: this.config.modelName });
      optimizers[name] = await this.optimizers.get(name)!.saveState();
    }
    return { step: this.stepsDone, skippedSteps: this.skippedSteps, skippedInARow: this.skippedInARow, adapters, optimizers };
  }

  /** Restores a state saved by saveState of a trainer with the same config. */
  async loadState(state: TrainerState): Promise<void> {
    await this.loadAdapters(state.adapters);
    for (const name of this.adapters.names) this.optimizers.get(name)!.loadState(state.optimizers[name]!, `checkpoint optimizer ${name}`);
    this.stepsDone = state.step;
    this.skippedSteps = state.skippedSteps;
    this.skippedInARow = state.skippedInARow;
  }

  /** Sets every adapter's weights from PEFT files (one set per adapter name of this run). */
  async loadAdapters(files: Record<string, PeftFiles>): Promise<void> {
    const names = this.adapters.names;
    const have = Object.keys(files).sort().join(',');
    if (have !== [...names].sort().join(',')) throw new TrainError(`adapters given: [${have}], this run has [${names.join(', ')}]: a different workflow or policy?`);
    for (const name of names) {
      const loaded = await loadPeft(this.gpu, new MemorySource({ ...files[name]! }, `adapter ${name}`), this.model.config, name);
      const target = this.adapters.get(name);
      try {
        for (const { layer, module, pair } of target.entries()) {
          const src = loaded.adapter.pair(layer, module);
          if (!src || src.A.size !== pair.A.size || src.B.size !== pair.B.size) throw new TrainError(`adapter ${name}: ${module} of layer ${layer} is missing or has another rank than this run's (${this.config.lora.rank})`);
          this.gpu.copy(src.A, pair.A, pair.A.byteLength);
          this.gpu.copy(src.B, pair.B, pair.B.byteLength);
        }
        await this.gpu.sync();
      } finally {
        loaded.adapter.release();
      }
      target.markUpdated();
    }
  }

  /** The trained adapters in PEFT format. */
  async adapterFiles(): Promise<{ name: string; files: PeftFiles }[]> {
    const out: { name: string; files: PeftFiles }[] = [];
    for (const name of this.adapters.names) out.push({ name, files: await savePeft(this.gpu, this.adapters.get(name), { baseModel: this.config.modelName }) });
    return out;
  }

  async release(): Promise<void> {
    await this.engine.close();
    for (const o of this.optimizers.values()) o.release();
    this.adapters.release();
  }
}

const now = () => (typeof performance !== 'undefined' ? performance.now() : Date.now());
const mean = (xs: readonly number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);

/** A seeded Fisher–Yates permutation of 0..n-1. */
function permutation(n: number, seed: number): number[] {
  const p = Array.from({ length: n }, (_, i) => i);
  let s = seed >>> 0;
  for (let i = n - 1; i > 0; i--) {
    s = (Math.imul(s ^ (s >>> 15), 0x2c1b3c6d) + 0x9e3779b9) >>> 0;
    const j = s % (i + 1);
    [p[i], p[j]] = [p[j]!, p[i]!];
  }
  return p;
}

/** Sets each turn's reward: the episode outcome, or under 'own-answer' a graded solution's own grade. */
function ownRewards(ep: GradedEpisode, mode: RewardMode): void {
  for (const t of ep.trajectories) t.reward = ep.reward;
  if (mode !== 'own-answer') return;
  // The k-th graded answer of a slot belongs to that slot's k-th turn (turns in call order).
  const seen = new Map<string, number>();
  ep.outcome.answers.forEach((a, i) => {
    if (a.role !== 'generator' && a.role !== 'worker') return;
    const k = seen.get(a.slot) ?? 0;
    seen.set(a.slot, k + 1);
    const t = ep.trajectories.filter((x) => x.slot === a.slot)[k];
    if (t) t.reward = ep.answerGrades[i]!;
  });
}

/** Marks the turn each violation names (its slot's turn, the last of them when a slot has several). */
function markViolations(trajs: Trajectory[], violations: GradedEpisode['outcome']['violations']): void {
  for (const v of violations) {
    const of = trajs.filter((t) => t.slot === v.slot && t.turn === v.turn);
    const t = of[v.occurrence ?? of.length - 1];
    if (t) t.violation = v.kind;
  }
}

function checkConfig(c: TrainerConfig, tasks: TaskSet): void {
  const pos = (k: string, v: number) => {
    if (!Number.isInteger(v) || v < 1) throw new TrainError(`config: ${k} must be a positive integer, got ${v}`);
  };
  pos('steps', c.steps);
  pos('batchTasks', c.batchTasks);
  pos('groupSize', c.groupSize);
  pos('sampling.maxNewTokens', c.sampling.maxNewTokens);
  pos('validation.every', c.validation.every);
  pos('validation.tasks', c.validation.tasks);
  if (c.validation.samples !== undefined) pos('validation.samples', c.validation.samples);
  if (!(c.validation.temperature >= 0)) throw new TrainError(`config: validation.temperature must be >= 0, got ${c.validation.temperature}`);
  if (!(c.sampling.temperature > 0)) throw new TrainError(`config: the sampling temperature must be > 0 for GRPO, got ${c.sampling.temperature}`);
  if (!(c.lr > 0)) throw new TrainError(`config: lr must be > 0, got ${c.lr}`);
  if (!tasks.train.length) throw new TrainError('config: the task set has no train tasks');
  if (c.policy !== 'shared' && c.policy !== 'isolated') throw new TrainError(`config: policy must be shared or isolated, got ${c.policy}`);
  if (c.groupKey !== 'task-slot-turn' && c.groupKey !== 'task-role') throw new TrainError(`config: groupKey must be task-slot-turn or task-role, got ${c.groupKey}`);
}

function datasetCounts(report: DatasetReport | undefined): { rows?: number; bad?: number; badByReason?: Record<string, number> } {
  return report ? { rows: report.rows, bad: report.bad, badByReason: { ...report.badByReason } } : {};
}
