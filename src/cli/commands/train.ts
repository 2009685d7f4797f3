// `troupe train`: multi-agent GRPO of a workflow on LoRA adapters (shared or isolated policies), with
// validation, checkpoints, metrics.jsonl, the final adapters and report.html in the run directory.
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { RUN_FILES } from '../../rl/checkpoint.ts';
import { atomicWriteFile } from '../../util/atomic-write.ts';
import { Trainer, type TrainerConfig } from '../../rl/trainer.ts';
import { numberOption, parse } from '../args.ts';
import { UsageError, type Command } from '../command.ts';
import { driverLine, openRun } from '../run-setup.ts';
import { type RunArgs, type SavedRunConfig, TRAIN_FLAG_OPTIONS, TRAIN_FLAG_USAGE, type TrainFlags, trainerConfig } from '../train-config.ts';
import { runTrainLoop, type TrainLoopResult } from '../train-loop.ts';

export const TRAIN_USAGE_COMMON = [
  '  --model DIR|demo          a Qwen3ForCausalLM checkpoint directory, or the built-in demo model (default demo)',
  '  --dtype f16|f32           base weight storage (default f16 when the GPU has shader-f16)',
  '  --task NAME               math | code (built-in generators, or --data FILE of that kind) | demo (default demo)',
  '  --data FILE               a JSONL or Parquet dataset (DAPO-Math, DeepCoder, or troupe rows)',
  ...TRAIN_FLAG_USAGE,
  '  --checkpoint-every K      checkpoint every K steps (default: every validation)',
];

export const command: Command = {
  name: 'train',
  summary: 'train a multi-agent workflow with GRPO (LoRA adapters, shared or isolated policies)',
  usage: [
    'usage: troupe train [--model DIR|demo] [--workflow NAME] [--policy shared|isolated] [--task NAME] [options] --out RUNDIR',
    '       troupe train --resume RUNDIR',
    '',
    ...TRAIN_USAGE_COMMON,
    '  --out RUNDIR              the run directory (metrics.jsonl, samples.jsonl, checkpoints/, adapters/, report.html)',
    '  --resume RUNDIR           continue a run from its latest checkpoint, exactly (same config)',
    '  --stop-after N            stop after step N with a checkpoint (continue later with --resume)',
    '',
    'A progress bar with ETA on a terminal, one line per step otherwise (stderr). The last stdout line is JSON:',
    '{"runDir", "steps", "before", "after"} with validation accuracy before and after training.',
  ].join('\n'),
  async run(argv) {
    const { values: v } = parse('train', {
      args: argv,
      options: { ...TRAIN_FLAG_OPTIONS, model: { type: 'string' }, dtype: { type: 'string' }, task: { type: 'string' }, data: { type: 'string' }, out: { type: 'string' }, resume: { type: 'string' }, 'checkpoint-every': { type: 'string' }, 'stop-after': { type: 'string' } },
    });
    const result = await train('train', v as TrainFlags & Record<string, string | undefined>);
    console.log(JSON.stringify({ runDir: result.runDir, steps: result.steps, before: result.before?.accuracy ?? null, after: result.after?.accuracy ?? null }));
    return 0;
  },
};

/** Starts (or resumes) a run from parsed flags; shared with `troupe start`. */
export async function train(command: string, v: TrainFlags & Record<string, string | undefined>): Promise<TrainLoopResult> {
  let args: RunArgs;
  let config: TrainerConfig;
  let runDir: string;
  const resume = v.resume !== undefined;
  if (resume) {
    const given = Object.keys(v).filter((k) => k !== 'resume' && k !== 'stop-after' && v[k] !== undefined);
    if (given.length) throw new UsageError(`troupe ${command}: --resume takes the run's saved config; drop --${given.join(', --')}`);
    runDir = v.resume!;
    let saved: SavedRunConfig;
    try {
      saved = JSON.parse(await readFile(join(runDir, RUN_FILES.config), 'utf8'));
    } catch (e) {
      throw new UsageError(`troupe ${command}: --resume ${runDir}: no readable ${RUN_FILES.config} (${(e as Error).message})`);
    }
    if (saved.format !== 'troupe-run-1') throw new UsageError(`troupe ${command}: ${join(runDir, RUN_FILES.config)} is not a troupe run config`);
    args = saved.args;
    config = saved.trainer;
  } else {
    if (v.out === undefined) throw new UsageError(`troupe ${command}: --out RUNDIR is required (or --resume RUNDIR)`);
    runDir = v.out;
    const task = v.task ?? 'demo';
    const model = v.model ?? 'demo';
    config = await trainerConfig(command, v, { taskName: v.data ? `${task}:${v.data}` : task, modelName: model });
    const every = numberOption(command, 'checkpoint-every', v['checkpoint-every'], config.validation.every);
    if (!Number.isInteger(every) || every < 1) throw new UsageError(`troupe ${command}: --checkpoint-every must be a positive integer`);
    args = { model, dtype: v.dtype, task, data: v.data, checkpointEvery: every };
  }
  if (!resume) {
    // The run directory is checked (and its config written) before any work starts.
    if (!(await isEmptyRun(runDir))) throw new UsageError(`troupe ${command}: ${runDir} already holds a run: continue it with --resume ${runDir}, or choose another --out`);
    try {
      await mkdir(runDir, { recursive: true });
    } catch (e) {
      throw new UsageError(`troupe ${command}: cannot create the run directory ${runDir}: ${(e as Error).message}`);
    }
    const saved: SavedRunConfig = { format: 'troupe-run-1', args, trainer: config };
    await atomicWriteFile(join(runDir, RUN_FILES.config), JSON.stringify(saved, null, 2) + '\n');
  }
  const { gpu, model, tokenizer, tasks } = await openRun(command, { ...args, seed: config.seed });
  console.error(driverLine(gpu));
  console.error(`troupe ${command}: ${config.workflow} / ${config.policy} on ${tasks.description}: ${config.steps} steps of ${config.batchTasks} tasks x ${config.groupSize} rollouts`);
  const trainer = new Trainer({ gpu, model, tokenizer, tasks, config });
  try {
    const stopAfter = v['stop-after'] === undefined ? undefined : numberOption(command, 'stop-after', v['stop-after'], 0);
    if (stopAfter !== undefined && !(Number.isInteger(stopAfter) && stopAfter >= 1)) throw new UsageError(`troupe ${command}: --stop-after must be a positive integer`);
    return await runTrainLoop(trainer, { runDir, resume, checkpointEvery: args.checkpointEvery, stopAfter });
  } finally {
    await trainer.release().catch(() => {});
    model.release();
    gpu.destroy();
  }
}

async function isEmptyRun(dir: string): Promise<boolean> {
  try {
    await readFile(join(dir, RUN_FILES.metrics));
    return false;
  } catch {
    return true;
  }
}
