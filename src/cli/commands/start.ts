// `troupe start`: the main job of `npm start`: multi-agent GRPO on the built-in demo model (Voting with
// isolated policies unless told otherwise), sized for a CPU-only machine. Prints the driver, a progress
// bar with per-role lines, the before/after validation table, and the run directory as its last line.
import { parse } from '../args.ts';
import type { Command } from '../command.ts';
import { TRAIN_FLAG_OPTIONS, type TrainFlags } from '../train-config.ts';
import { train, TRAIN_USAGE_COMMON } from './train.ts';

export const command: Command = {
  name: 'start',
  summary: 'the demo: train Voting (isolated policies) on the built-in demo model, then report (what npm start runs)',
  usage: [
    'usage: troupe start [--workflow NAME] [--policy shared|isolated] [train options] [--out RUNDIR]',
    '',
    'troupe train with the demo defaults: --model demo --task demo --workflow voting --policy isolated --preset small,',
    'into runs/start-<time> unless --out is given. Ends with the validation table before/after training, overall',
    'and per role; the last stdout line is the run directory (metrics.jsonl, adapters/, report.html).',
    '',
    ...TRAIN_USAGE_COMMON,
    '  --out RUNDIR              the run directory',
  ].join('\n'),
  async run(argv) {
    const { values: v } = parse('start', {
      args: argv,
      options: { ...TRAIN_FLAG_OPTIONS, model: { type: 'string' }, dtype: { type: 'string' }, task: { type: 'string' }, data: { type: 'string' }, out: { type: 'string' }, 'checkpoint-every': { type: 'string' } },
    });
    const out = v.out ?? `runs/start-${new Date().toISOString().replace(/[:.]/g, '-').slice(0, 19)}`;
    const result = await train('start', { ...(v as TrainFlags & Record<string, string | undefined>), out });
    console.log(`report: ${result.runDir}/report.html`);
    console.log(result.runDir);
    return 0;
  },
};
