// `troupe tune`: times every matmul kernel that can run each product of a model's shapes on this GPU and stores
// the fastest (src/kernels/matmul-tune.ts); train, sft, generate and bench then take those choices here. Prints
// each product's heuristic choice next to the tuned one, with the GPU time of both.
import { Gpu } from '../../gpu/gpu.ts';
import { tuneMatmuls } from '../../kernels/matmul-tune.ts';
import { saveTuning } from '../../kernels/matmul-tune-store.ts';
import { choiceName, fasterThanHeuristic, type TunedEntry } from '../../kernels/matmul-tuning.ts';
import { QWEN3_PRESETS } from '../../model/presets.ts';
import { DEFAULT_TUNE_ROWS, modelTuneShapes } from '../../model/tune-shapes.ts';
import { numberOption, parse } from '../args.ts';
import { type Command, UsageError } from '../command.ts';
import { MODEL_OPTIONS, openConfig } from '../model-args.ts';
import { Progress } from '../progress.ts';
import { driverLine } from '../run-setup.ts';

function parseRows(text: string | undefined): number[] {
  if (text === undefined) return [...DEFAULT_TUNE_ROWS];
  const rows = text.split(',').map((t) => Number(t.trim()));
  if (!rows.length || rows.some((r) => !Number.isInteger(r) || r < 1)) throw new UsageError(`troupe tune: --rows must be positive integers, comma-separated, got "${text}"`);
  return [...new Set(rows)].sort((a, b) => a - b);
}

const us = (s: number) => (s * 1e6).toFixed(1);

export function formatTuning(entries: readonly TunedEntry[]): string {
  const lines = ['product (rows x N x K, a/b)            heuristic            us   tuned                us  speedup'];
  for (const e of entries) {
    const what = `${e.M}x${e.N}x${e.K}${e.transB ? ' x·Wᵀ' : ' dy·W'} ${e.a}/${e.b}`;
    lines.push(`${what.padEnd(38)} ${choiceName(e.auto).padEnd(16)} ${us(e.autoSeconds).padStart(9)}   ${choiceName(e.choice).padEnd(16)} ${us(e.seconds).padStart(9)}  ${(e.autoSeconds / e.seconds).toFixed(2)}x`);
  }
  return lines.join('\n');
}

export const command: Command = {
  name: 'tune',
  summary: "time every matmul kernel on a model's products on this GPU and keep the fastest for later runs",
  usage: [
    'usage: troupe tune [--model DIR|demo | --random-weights PRESET] [--dtype f16|f32] [--rows LIST] [--round-ms MS] [--json]',
    '',
    '  --model DIR|demo          the shapes of this checkpoint (its config.json; default: the demo model)',
    `  --random-weights PRESET   the shapes of a released model (${Object.keys(QWEN3_PRESETS).join(', ')}; any case)`,
    '  --dtype f16|f32           weight storage the runs use (default f16 when the GPU has shader-f16, else f32)',
    `  --rows LIST               row counts to tune (default ${DEFAULT_TUNE_ROWS.join(',')}); each stands for the rows`,
    '                            above the next smaller one (the smallest: above half of it)',
    '  --round-ms MS             GPU time of a timed round (default 4; at least 20 waits for the GPU)',
    '  --json                    print the entries as JSON lines instead of the table',
    '',
    'The table goes to TROUPE_CACHE_DIR (else $XDG_CACHE_HOME/troupe, else ~/.cache/troupe), one file per adapter and',
    'kernel version; train, sft, generate and bench use it from then on (TROUPE_TUNE=off: they do not).',
  ].join('\n'),
  async run(argv) {
    const { values: v } = parse('tune', {
      args: argv,
      options: {
        ...MODEL_OPTIONS,
        rows: { type: 'string' },
        'round-ms': { type: 'string' },
        json: { type: 'boolean' },
      },
    });
    if (v.dtype !== undefined && v.dtype !== 'f16' && v.dtype !== 'f32') throw new UsageError(`troupe tune: --dtype must be f16 or f32, got "${v.dtype}"`);
    const roundMs = numberOption('tune', 'round-ms', v['round-ms'], 4);
    if (!(roundMs > 0)) throw new UsageError(`troupe tune: --round-ms must be > 0, got ${roundMs}`);
    const rows = parseRows(v.rows);
    const config = await openConfig('tune', v);
    const gpu = await Gpu.create();
    try {
      console.error(driverLine(gpu));
      const dtype = (v.dtype as 'f16' | 'f32' | undefined) ?? (gpu.f16 ? 'f16' : 'f32');
      if (dtype === 'f16' && !gpu.f16) throw new UsageError('troupe tune: --dtype f16 needs the shader-f16 feature, which this GPU lacks');
      const shapes = modelTuneShapes(config, dtype, rows);
      const progress = new Progress({ label: 'tune', total: shapes.length });
      const tuning = await tuneMatmuls(gpu, shapes, { roundMs, onShape: (e) => progress.tick(1, `${e.M}x${e.N}x${e.K} ${choiceName(e.choice)}`) });
      progress.done();
      console.log(v.json ? tuning.entries.map((e) => JSON.stringify(e)).join('\n') : formatTuning(tuning.entries));
      const where = await saveTuning(gpu, tuning);
      console.error(`troupe tune: ${tuning.entries.length} products, ${fasterThanHeuristic(tuning.entries)} faster than the heuristic's choice by more than 3%; table in ${where}`);
      return 0;
    } finally {
      gpu.destroy();
    }
  },
};
