// `troupe start`: the main job of `npm start`. For now: doctor, then the quick kernel benchmark
// (the demo model run joins here when it exists).
import { parse } from '../args.ts';
import { BENCH_SUITES } from '../bench-suites.ts';
import type { Command } from '../command.ts';
import { runBench } from './bench.ts';
import { formatDoctor, runDoctor } from './doctor.ts';

export const command: Command = {
  name: 'start',
  summary: 'doctor, then the quick kernel benchmark (what npm start runs)',
  usage: 'usage: troupe start\n\nRuns troupe doctor, then troupe bench kernels --quick.',
  async run(argv) {
    parse('start', { args: argv, options: {} });
    const doctor = await runDoctor();
    console.log(formatDoctor(doctor));
    if (!doctor.ok) return 1;
    const kernels = BENCH_SUITES.find((s) => s.name === 'kernels')!;
    console.log('\nquick kernel benchmark:');
    const rows = await runBench(kernels, { quick: true, json: false, extra: {} });
    return rows.length ? 0 : 1;
  },
};
