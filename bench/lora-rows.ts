// Multi-LoRA benchmark: one linear's LoRA delta over a batch whose rows interleave 3 rank-64 adapters
// and the base model (one row in four each), Qwen3-0.6B module shapes, at decode (T = 16, 256) and
// prefill (T = 2048) sizes. Methods:
//   bank    the lora_rows kernel over the set's LoraBank (AdapterSet.rows: what the rollout engine and
//           the trainer run): rows in any order
//   single  one adapter over every row (two matmuls, no routing): the same-adapter floor
// Values are GB/s of nominal traffic (x read, y read + written, each used adapter's A and B read once),
// the same work for every method, so value ratios are speed ratios. Timing as bench/kernels.ts: one
// warm-up round, then the median of 5 repeats of 10 applications, wall clock around gpu.sync().
// bench/torch/bench_lora.py times PEFT's mixed-batch LoRA (per adapter: index rows, two matmuls,
// index_add) and the single-adapter product under the same names:
//   troupe bench lora --json          python3 bench/torch/bench_lora.py --out torch-lora.json
import type { Gpu } from '../src/gpu/gpu.ts';
import type { LinearModule } from '../src/model/adapter.ts';
import { AdapterSet, linearShapes, LoraAdapter } from '../src/model/lora.ts';
import { qwen3Preset } from '../src/model/presets.ts';
import { benchRow, type BenchRow } from './results.ts';
import { medianSecondsPerCall } from './timing.ts';

const REPEATS = 5;
const APPLICATIONS = 10;
const RANK = 64;
const ADAPTERS = ['generator', 'evaluator', 'aggregator'];

/** Row t's adapter: the three adapters and the base model in turn. */
const adapterOfRow = (t: number): string | null => ADAPTERS[t % 4] ?? null;

function timeApply(gpu: Gpu, run: () => void): Promise<number> {
  return medianSecondsPerCall(gpu, run, { calls: APPLICATIONS, repeats: REPEATS });
}

/** Values in [-1, 1), never 0. */
function values(n: number, seed: number): Float32Array {
  const out = new Float32Array(n);
  let s = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = ((s >>> 8) + 0.5) / (1 << 23) - 1;
  }
  return out;
}

export async function benchLoraRows(gpu: Gpu, opts: { quick: boolean; filter?: string }): Promise<BenchRow[]> {
  const preset = qwen3Preset('Qwen3-0.6B');
  const config = opts.quick ? { ...preset, hiddenSize: 64, intermediateSize: 96, numHeads: 2, headDim: 16, numKvHeads: 1 } : preset;
  const modules: LinearModule[] = ['q_proj', 'gate_proj', 'down_proj'];
  const rank = opts.quick ? 4 : RANK;
  const model = { ...config, numLayers: 1 };
  const set = new AdapterSet();
  ADAPTERS.forEach((name, i) => set.add(LoraAdapter.create(gpu, name, model, { rank, alpha: 2 * rank, targets: modules }, { seed: i + 1, randomB: 0.01 })));
  const shapes = linearShapes(model);
  const rows: BenchRow[] = [];
  try {
    for (const T of opts.quick ? [5] : [16, 256, 2048]) {
      const perRow = Array.from({ length: T }, (_, t) => adapterOfRow(t));
      const used = new Set(perRow.filter((a) => a !== null)).size;
      const bankRows = set.rows(perRow);
      for (const m of modules) {
        const s = shapes[m];
        const x = gpu.upload(values(T * s.in, 1), [T, s.in], 'f32', 'bench.x');
        const y = gpu.upload(values(T * s.out, 2), [T, s.out], 'f32', 'bench.y');
        const bytes = (T * s.in + 2 * T * s.out + used * rank * (s.in + s.out)) * 4;
        const methods: [string, () => void][] = [
          ['bank', () => bankRows.apply(gpu, 0, m, x, y)],
          ['single', () => set.get(ADAPTERS[0]!).apply(gpu, 0, m, x, y)],
        ];
        for (const [method, run] of methods) {
          const name = `lora_${method}_3x_r${rank}_${m}_T${T}`;
          if (opts.filter && !name.includes(opts.filter)) continue;
          rows.push(benchRow(gpu, name, bytes / (await timeApply(gpu, run)) / 1e9, 'GB/s'));
        }
        x.release();
        y.release();
      }
      bankRows.release();
    }
  } finally {
    set.release();
    gpu.pool.trim();
  }
  return rows;
}
