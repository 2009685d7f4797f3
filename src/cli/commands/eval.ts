// `troupe eval`: accuracy of a workflow on held-out tasks, overall and per role, with the base model
// or a run's trained adapters (--run RUNDIR takes the run's model, task, workflow and policy).
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { PeftFiles } from '../../model/peft.ts';
import { readPeftDir, RUN_FILES } from '../../rl/checkpoint.ts';
import { Trainer, type TrainerConfig } from '../../rl/trainer.ts';
import { parse } from '../args.ts';
import { UsageError, type Command } from '../command.ts';
import { driverLine, openRun } from '../run-setup.ts';
import { type RunArgs, type SavedRunConfig, TRAIN_FLAG_OPTIONS, type TrainFlags, trainerConfig } from '../train-config.ts';
import { validationLine } from '../train-loop.ts';
import { ROLE_TYPES } from '../../workflows/types.ts';

export const command: Command = {
  name: 'eval',
  summary: 'accuracy of a workflow on held-out tasks, overall and per role (base model or a run\'s adapters)',
  usage: [
    'usage: troupe eval --run RUNDIR [--val-tasks N] [--temperature T]',
    '       troupe eval [--model DIR|demo] [--task NAME] [--data FILE] [--workflow NAME] [--val-tasks N] [--temperature T]',
    '',
    '  --run RUNDIR              a training run: its model, tasks, workflow, policy and final adapters (RUNDIR/adapters)',
    '  --model, --task, --data, --workflow   as in troupe train (the base model, no adapters)',
    '  --val-tasks N             validation tasks to run (default: the preset\'s)',
    '  --temperature T           sampling temperature (default 0: greedy)',
    '',
    'Prints one line per role; the last stdout line is JSON {"accuracy", "tasks", "roles": {role: accuracy}}.',
  ].join('\n'),
  async run(argv) {
    const { values: v } = parse('eval', {
      args: argv,
      options: { ...TRAIN_FLAG_OPTIONS, model: { type: 'string' }, dtype: { type: 'string' }, task: { type: 'string' }, data: { type: 'string' }, run: { type: 'string' } },
    });
    let args: Omit<RunArgs, 'checkpointEvery'>;
    let config: TrainerConfig;
    let adapters: Record<string, PeftFiles> | null = null;
    if (v.run !== undefined) {
      for (const k of ['model', 'task', 'data', 'workflow', 'policy'] as const) {
        if (v[k] !== undefined) throw new UsageError(`troupe eval: --run takes the run's --${k}; drop it`);
      }
      let saved: SavedRunConfig;
      try {
        saved = JSON.parse(await readFile(join(v.run, RUN_FILES.config), 'utf8'));
      } catch (e) {
        throw new UsageError(`troupe eval: --run ${v.run}: no readable ${RUN_FILES.config} (${(e as Error).message})`);
      }
      args = saved.args;
      config = saved.trainer;
      adapters = await readAdapters(join(v.run, RUN_FILES.adapters));
    } else {
      const task = v.task ?? 'demo';
      const model = v.model ?? 'demo';
      args = { model, dtype: v.dtype, task, data: v.data };
      // Every role frozen: the base model plays them all.
      config = await trainerConfig('eval', v as TrainFlags, { taskName: task, modelName: model });
      config.frozenRoles = [...ROLE_TYPES];
    }
    if (v['val-tasks'] !== undefined) config.validation.tasks = Number(v['val-tasks']);
    if (!Number.isInteger(config.validation.tasks) || config.validation.tasks < 1) throw new UsageError('troupe eval: --val-tasks must be a positive integer');
    if (v.temperature !== undefined) {
      const t = Number(v.temperature);
      if (!(t >= 0)) throw new UsageError('troupe eval: --temperature must be >= 0');
      config.validation.temperature = t;
    }
    const { gpu, model, tokenizer, tasks } = await openRun('eval', { ...args, seed: config.seed });
    console.error(driverLine(gpu));
    const trainer = new Trainer({ gpu, model, tokenizer, tasks, config });
    try {
      if (adapters) await trainer.loadAdapters(adapters);
      const r = await trainer.validate();
      console.error(validationLine(r));
      for (const [role, m] of Object.entries(r.roles)) {
        console.log(`${role.padEnd(12)} accuracy ${m!.accuracy === null ? '-' : m!.accuracy.toFixed(3)}  turns ${m!.turns}  format violations ${m!.formatViolationRate.toFixed(3)}`);
      }
      const roles = Object.fromEntries(Object.entries(r.roles).map(([k, m]) => [k, m!.accuracy]));
      console.log(JSON.stringify({ accuracy: r.accuracy, tasks: r.tasks, workflow: config.workflow, adapters: adapters ? Object.keys(adapters) : [], roles }));
      return 0;
    } finally {
      await trainer.release().catch(() => {});
      model.release();
      gpu.destroy();
    }
  },
};

async function readAdapters(dir: string): Promise<Record<string, PeftFiles>> {
  let names: string[];
  try {
    names = (await readdir(dir)).filter((n) => !n.startsWith('.'));
  } catch (e) {
    throw new UsageError(`troupe eval: no trained adapters in ${dir} (${(e as Error).message}); has the run finished?`);
  }
  const out: Record<string, PeftFiles> = {};
  for (const n of names) {
    out[n] = await readPeftDir(join(dir, n));
  }
  return out;
}
