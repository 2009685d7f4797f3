// Kernel benchmark: matmul (the model's shapes: x·Wᵀ with M = tokens, decode, backward layouts, f16
// weights), softmax, reductions, transpose, casts and an elementwise add. Each row's value is GFLOP/s
// (compute-bound) or GB/s of nominal traffic (memory-bound: bytes read once + written once). Timing:
// one warm-up round, then the median of 5 repeats of 10 dispatches (full runs: of as many as make a round last
// 50 ms, bench/timing.ts), wall clock around gpu.sync(). With --timeline each row has a twin named <row>_gpu_busy:
// the rate over the rounds' GPU busy time, for kernels (decode's, a few microseconds) that record slower than they run.
// bench/torch/bench_kernels.py times the same names and shapes in PyTorch; bench/compare.ts joins them:
//   troupe bench kernels --json --out dawn.jsonl            (Node/Dawn; Deno/wgpu likewise)
//   python3 bench/torch/bench_kernels.py --out torch.json
//   deno run -A bench/compare.ts dawn.jsonl torch.json > bench/results.json
// Rows named matmul_<dtype>_<variant>_... force one variant (for tuning matmulVariant); they have no baseline.
// matmul_f32_/f16w_ rows run the f32-FMA kernels (matmul's 'f32' policy) whatever the device has.
// matmul_tc[<tile>]_<f16|f16w>_... rows (tensor cores, src/kernels/matmul-tc.ts; f16: both operands f16, f16w:
// f32 activations and f16 weights, as the model runs) run where the subgroup matrix feature is, each checked on
// sampled entries; bench/run-h200.sh joins them with PyTorch's matmul_bf16w_ rows of the same shape.
import type { Gpu } from '../src/gpu/gpu.ts';
import type { Tensor } from '../src/gpu/tensor.ts';
import { cast, castBf16 } from '../src/kernels/cast.ts';
import { add } from '../src/kernels/elementwise.ts';
import { matmulVariant, matmulWith, type MatmulVariant } from '../src/kernels/matmul.ts';
import { castDirectRows, directParts, TC_TILES, type TcTileName, tensorCoreDirectPartsPlan, tensorCoreDirectPlan, tensorCorePlan } from '../src/kernels/matmul-tc.ts';
import { reduceRows } from '../src/kernels/reduce.ts';
import { sampleTokensPacked, type SamplingRow } from '../src/kernels/sample.ts';
import { softmax, softmaxBackward } from '../src/kernels/softmax.ts';
import { transpose } from '../src/kernels/transpose.ts';
import { benchRow, type BenchRow } from './results.ts';
import { timePerCall } from './timing.ts';

const REPEATS = 5;
const DISPATCHES = 10;
const MIN_ROUND_MS = 50;

interface Case {
  name: string;
  unit: 'GFLOP/s' | 'GB/s';
  /** FLOPs or bytes of one dispatch. */
  work: number;
  needsF16?: boolean;
  /** Runs only where tensorCorePlan (direct: tensorCoreDirectPlan) accepts the shape. */
  tensorCores?: { M: number; N: number; K: number; transA: boolean; transB: boolean; tile?: TcTileName; direct?: Direct; splits?: number };
  /** Runs only where this gives no reason against it. */
  unavailable?(gpu: Gpu): string | null;
  /** Allocates inputs; returns one dispatch, the tensors to free afterwards, and optionally a check of the
   * result after one dispatch (an error message, or null). */
  setup(gpu: Gpu): { run(): void; tensors: Tensor[]; verify?(): Promise<string | null> };
}

/** Values in [-1, 1), never 0: a random block repeated (filling 10^8 values one by one is slow). */
function randomValues(n: number, seed: number): Float32Array {
  const out = new Float32Array(n);
  const block = Math.min(n, 1 << 20);
  let s = seed >>> 0 || 1;
  for (let i = 0; i < block; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = ((s >>> 8) + 0.5) / (1 << 23) - 1;
  }
  for (let off = block; off < n; off += block) out.copyWithin(off, 0, Math.min(block, n - off));
  return out;
}

function randomTensor(gpu: Gpu, shape: number[], dtype: 'f32' | 'f16', seed: number, label: string): Tensor {
  const n = shape.reduce((a, b) => a * b, 1);
  const t32 = gpu.upload(randomValues(n, seed), shape, 'f32', label);
  if (dtype === 'f32') return t32;
  const t16 = cast(gpu, t32, 'f16');
  t32.release();
  return t16;
}

type Layout = 'AB' | 'xWt' | 'AtB';

/** out[M, N] = op(a)·op(b) in the layout that names it: xWt = x [M,K] · W[N,K]ᵀ; AtB = a[K,M]ᵀ · b[K,N]. */
function matmulCase(layout: Layout, M: number, N: number, K: number, w: 'f32' | 'f16' = 'f32', variant: MatmulVariant | null = null): Case {
  const transA = layout === 'AtB';
  const transB = layout === 'xWt';
  const decode = M <= 16;
  const dtypeName = w === 'f16' ? 'f16w' : 'f32';
  const layoutName = layout === 'AB' ? '' : `${layout}_`;
  const variantName = variant ? `${variant}_` : '';
  return {
    name: `matmul_${dtypeName}_${variantName}${layoutName}${M}x${N}x${K}`,
    unit: decode ? 'GB/s' : 'GFLOP/s',
    work: decode ? M * K * 4 + N * K * (w === 'f16' ? 2 : 4) + M * N * 4 : 2 * M * N * K,
    needsF16: w === 'f16',
    setup(gpu) {
      const a = randomTensor(gpu, transA ? [K, M] : [M, K], 'f32', 1, 'bench.a');
      const b = randomTensor(gpu, transB ? [N, K] : [K, N], w, 2, 'bench.b');
      const out = gpu.tensor([M, N], 'f32', 'bench.out');
      const opts = { transA, transB, out, label: 'bench.matmul' };
      const v = variant ?? matmulVariant({ M, N, K, transA, transB }, gpu.report.cpuDriver === 'SwiftShader');
      return { run: () => void matmulWith(gpu, v, a, b, opts), tensors: [a, b, out] };
    },
  };
}

/** matmul_tc_direct's two versions: fragments straight from storage (1), slices staged in workgroup memory (2). */
type Direct = 'storage' | 'staged';

/** Tensor cores: rows matmul_tc[<tile>|_direct|_staged][ks<splits>]_<f16|f16w>_[<layout>_]MxNxK (no tile: matmul's
 * default for the shape; direct / staged: matmul_tc_direct's version 1 / 2, f16w x·Wᵀ only). */
function tcCase(layout: Layout, M: number, N: number, K: number, dt: 'f16' | 'f16w', tile?: TcTileName, direct?: Direct, splits?: number): Case {
  const transA = layout === 'AtB';
  const transB = layout === 'xWt';
  const kernel = direct ? `_${direct === 'staged' ? 'staged' : 'direct'}${splits ? `ks${splits}` : ''}` : (tile ?? '');
  return {
    name: `matmul_tc${kernel}_${dt}_${layout === 'AB' ? '' : `${layout}_`}${M}x${N}x${K}`,
    unit: 'GFLOP/s',
    work: 2 * M * N * K,
    tensorCores: { M, N, K, transA, transB, tile, direct, splits },
    setup(gpu) {
      const a = randomTensor(gpu, transA ? [K, M] : [M, K], dt === 'f16' ? 'f16' : 'f32', 1, 'bench.a');
      const b = randomTensor(gpu, transB ? [N, K] : [K, N], 'f16', 2, 'bench.b');
      const out = gpu.tensor([M, N], 'f32', 'bench.out');
      const verify = async () => {
        // 64 sampled entries against f64 dot products of the inputs; f32 inputs pass through f16 (11 bits)
        const [as, bs, ys] = await Promise.all([gpu.readF32(a), gpu.readF32(b), gpu.readF32(out)]);
        let worst = 0;
        for (let s = 0; s < 64; s++) {
          const i = (s * 7919) % M;
          const j = (s * 104729 + 13) % N;
          let acc = 0;
          for (let k = 0; k < K; k++) acc += as[transA ? k * M + i : i * K + k]! * bs[transB ? j * K + k : k * N + j]!;
          worst = Math.max(worst, Math.abs(ys[i * N + j]! - acc) / (Math.sqrt(K) + Math.abs(acc)));
        }
        const tolerance = dt === 'f16' ? 1e-5 : 2e-3;
        return worst < tolerance ? null : `worst sampled error ${worst.toExponential(2)} (relative to sqrt(K) + |y|), tolerance ${tolerance}`;
      };
      const opts = { transA, transB, out, tcTile: tile, tcSplits: splits, tcStaged: direct === 'staged', label: 'bench.matmul_tc' };
      return { run: () => void matmulWith(gpu, direct ? 'tc_direct' : 'tc', a, b, opts), tensors: [a, b, out], verify };
    },
  };
}

/** Products that share their input on matmul_tc_direct (q, k, v; gate, up), x cast once: one dispatch for all of them
 * (directParts: matmul_tc_parts…, TROUPE_TC_DIRECT_PARTS=on in the model) or one each (matmul_tc_sep…, the default). */
function tcPartsCase(M: number, Ns: number[], K: number, joined: boolean): Case {
  const weights = Ns.map((n) => ({ dtype: 'f16' as const, shape: [n, K], label: `bench.w${n}` }));
  return {
    name: `matmul_tc_${joined ? 'parts' : 'sep'}_f16w_xWt_${M}x${Ns.join('+')}x${K}`,
    unit: 'GFLOP/s',
    work: 2 * M * Ns.reduce((a, b) => a + b, 0) * K,
    unavailable: (gpu) => {
      const plan = tensorCoreDirectPartsPlan(gpu, M, K, weights);
      return typeof plan === 'string' ? plan : null;
    },
    setup(gpu) {
      const x = randomTensor(gpu, [M, K], 'f32', 1, 'bench.x');
      const ws = Ns.map((n, i) => randomTensor(gpu, [n, K], 'f16', 2 + i, `bench.w${i}`));
      const run = () => {
        const rows = castDirectRows(gpu, x, 'bench.parts');
        const outs = joined
          ? directParts(gpu, rows, ws, Ns.map((_, i) => `bench.part${i}`))
          : ws.map((w) => matmulWith(gpu, 'tc_direct', x, w, { transB: true, x16: rows, label: 'bench.matmul_tc' }));
        rows.release();
        for (const o of outs) o.release();
      };
      return { run, tensors: [x, ...ws] };
    },
  };
}

function bytesCase(name: string, bytes: number, setup: Case['setup'], needsF16 = false): Case {
  return { name, unit: 'GB/s', work: bytes, setup, needsF16 };
}

function softmaxCases(rows: number, n: number): Case[] {
  const bytes = rows * n * 4;
  return [
    bytesCase(`softmax_f32_${rows}x${n}`, 2 * bytes, (gpu) => {
      const x = randomTensor(gpu, [rows, n], 'f32', 3, 'bench.x');
      const y = gpu.tensor([rows, n], 'f32', 'bench.y');
      return { run: () => softmax(gpu, x, y), tensors: [x, y] };
    }),
    bytesCase(`softmax_backward_f32_${rows}x${n}`, 3 * bytes, (gpu) => {
      const y = randomTensor(gpu, [rows, n], 'f32', 4, 'bench.y');
      const dy = randomTensor(gpu, [rows, n], 'f32', 5, 'bench.dy');
      const dx = gpu.tensor([rows, n], 'f32', 'bench.dx');
      return { run: () => softmaxBackward(gpu, y, dy, dx), tensors: [y, dy, dx] };
    }),
  ];
}

/** Sampling (T = 0.7, top-p 1, as the study) from f32 logits of a decode batch: GB/s of the logits read once. */
function sampleCase(rows: number, vocab: number): Case {
  return bytesCase(`sample_f32_${rows}x${vocab}`, rows * vocab * 4, (gpu) => {
    const x = randomTensor(gpu, [rows, vocab], 'f32', 6, 'bench.logits');
    const params: SamplingRow[] = Array.from({ length: rows }, (_, i) => ({ temperature: 0.7, topP: 1, seed: 1, stream: i, step: 0 }));
    return { run: () => sampleTokensPacked(gpu, x, params).packed.release(), tensors: [x] };
  });
}

function otherCases(n: number, rows: number, cols: number, side: number): Case[] {
  return [
    bytesCase(`add_f32_${n}`, 3 * n * 4, (gpu) => {
      const a = randomTensor(gpu, [n], 'f32', 6, 'bench.a');
      const b = randomTensor(gpu, [n], 'f32', 7, 'bench.b');
      const out = gpu.tensor([n], 'f32', 'bench.out');
      return { run: () => add(gpu, a, b, out), tensors: [a, b, out] };
    }),
    bytesCase(`reduce_sumsq_f32_${rows}x${cols}`, rows * cols * 4 + rows * 4, (gpu) => {
      const x = randomTensor(gpu, [rows, cols], 'f32', 8, 'bench.x');
      const out = gpu.tensor([rows], 'f32', 'bench.out');
      return { run: () => reduceRows(gpu, x, 'sumsq', out), tensors: [x, out] };
    }),
    bytesCase(`transpose_f32_${side}x${side}`, 2 * side * side * 4, (gpu) => {
      const x = randomTensor(gpu, [side, side], 'f32', 9, 'bench.x');
      const out = gpu.tensor([side, side], 'f32', 'bench.out');
      return { run: () => transpose(gpu, x, out), tensors: [x, out] };
    }),
    bytesCase(`cast_bf16_f32_${n}`, n * 6, (gpu) => {
      const bits = gpu.upload(new Uint32Array(randomValues(Math.ceil(n / 2), 10).buffer), [Math.ceil(n / 2)], 'u32', 'bench.bits');
      const out = gpu.tensor([n], 'f32', 'bench.out');
      return { run: () => castBf16(gpu, bits, n, 'f32', out), tensors: [bits, out] };
    }),
    bytesCase(`cast_f32_f16_${n}`, n * 6, (gpu) => {
      const x = randomTensor(gpu, [n], 'f32', 11, 'bench.x');
      const out = gpu.tensor([n], 'f16', 'bench.out');
      return { run: () => cast(gpu, x, 'f16', out), tensors: [x, out] };
    }),
  ];
}

/** Qwen3-0.6B's linear layers as [N = out, K = in]: q, k/v, o, gate/up, down. */
const LINEARS: [number, number][] = [
  [2048, 1024],
  [1024, 1024],
  [1024, 2048],
  [3072, 1024],
  [1024, 3072],
];
const VOCAB = 151_936;

export function kernelCases(quick: boolean): Case[] {
  if (quick) {
    return [
      matmulCase('AB', 64, 64, 64),
      matmulCase('xWt', 32, 96, 64),
      matmulCase('xWt', 2, 96, 64),
      matmulCase('xWt', 2, 96, 64, 'f16'),
      matmulCase('AtB', 48, 40, 32),
      ...softmaxCases(8, 300),
      sampleCase(3, 300),
      ...otherCases(4096, 16, 256, 64),
    ];
  }
  const cases: Case[] = [matmulCase('AB', 4096, 4096, 4096)];
  // each variant where matmulVariant's thresholds switch (no PyTorch counterpart: for tuning them)
  cases.push(matmulCase('AB', 4096, 4096, 4096, 'f32', 'tile64v'), matmulCase('xWt', 16, 3072, 1024, 'f32', 'tile64v'));
  for (const v of ['tile64', 'tile64v', 'tile128'] as const) {
    cases.push(matmulCase('xWt', 512, 3072, 1024, 'f32', v), matmulCase('xWt', 1024, 1024, 1024, 'f32', v));
    cases.push(matmulCase('xWt', 2048, 1024, 1024, 'f32', v));
  }
  for (const w of ['f32', 'f16'] as const) {
    for (const M of [64, 256, 512, 2048, 8192]) for (const [N, K] of LINEARS) cases.push(matmulCase('xWt', M, N, K, w));
    cases.push(matmulCase('xWt', 256, VOCAB, 1024, w));
    cases.push(matmulCase('xWt', 2048, VOCAB, 1024, w));
    for (const M of [1, 16]) {
      for (const [N, K] of LINEARS) cases.push(matmulCase('xWt', M, N, K, w));
      cases.push(matmulCase('xWt', M, VOCAB, 1024, w));
    }
  }
  // backward: dx = dy·W (W [out, in] read as [K, N]) and dW = dyᵀ·x, with 2048 tokens
  cases.push(matmulCase('AB', 2048, 1024, 3072), matmulCase('AtB', 3072, 1024, 2048), matmulCase('AtB', 1024, 3072, 2048));
  // LoRA rank 16 over 8192 tokens: x·Aᵀ, h·Bᵀ, and the gradients dA = dhᵀ·x, dB = dyᵀ·h (split-K)
  cases.push(matmulCase('xWt', 8192, 16, 1024), matmulCase('xWt', 8192, 1024, 16));
  cases.push(matmulCase('AtB', 16, 1024, 8192), matmulCase('AtB', 1024, 16, 8192));
  cases.push(...softmaxCases(4096, 1024), ...softmaxCases(256, VOCAB));
  for (const rows of [1, 64, 256]) cases.push(sampleCase(rows, VOCAB));
  cases.push(...otherCases(1 << 24, 8192, 1024, 4096));
  // tensor cores: every tile at 4096^3 and three training shapes, then matmul's default tile on the model's products
  for (const tile of Object.keys(TC_TILES) as TcTileName[]) {
    cases.push(tcCase('xWt', 4096, 4096, 4096, 'f16', tile), tcCase('xWt', 8192, 3072, 1024, 'f16w', tile), tcCase('xWt', 8192, 1024, 3072, 'f16w', tile));
    cases.push(tcCase('AB', 8192, 1024, 3072, 'f16w', tile)); // dx = dy·W of down_proj
  }
  cases.push(tcCase('xWt', 4096, 4096, 4096, 'f16'), tcCase('xWt', 4096, 4096, 4096, 'f16w'));
  for (const M of [2048, 8192]) for (const [N, K] of LINEARS) cases.push(tcCase('xWt', M, N, K, 'f16w'));
  // tensor cores for batches of rows (decode, rollouts): matmul_tc_direct's two versions against the tiled kernel's
  // default tile
  for (const direct of ['storage', 'staged'] as const) {
    for (const M of [64, 256, 512, 1024, 2048, 8192]) for (const [N, K] of LINEARS) cases.push(tcCase('xWt', M, N, K, 'f16w', undefined, direct));
    cases.push(tcCase('xWt', 256, VOCAB, 1024, 'f16w', undefined, direct));
    for (const ks of [1, 2, 4, 8]) for (const [N, K] of [[3072, 1024], [1024, 3072], [2048, 1024]]) cases.push(tcCase('xWt', 256, N!, K!, 'f16w', undefined, direct, ks));
  }
  for (const [N, K] of LINEARS) cases.push(tcCase('xWt', 256, N, K, 'f16w'));
  // q, k, v and gate, up of Qwen3-0.6B from one cast: one dispatch against one each
  for (const M of [128, 256, 512]) for (const joined of [false, true]) cases.push(tcPartsCase(M, [2048, 1024, 1024], 1024, joined), tcPartsCase(M, [3072, 3072], 1024, joined));
  // backward dx = dy·W over 8192 tokens (W [out, in] read as [K, N])
  cases.push(tcCase('AB', 8192, 1024, 3072, 'f16w'), tcCase('AB', 8192, 3072, 1024, 'f16w'), tcCase('AB', 8192, 1024, 2048, 'f16w'));
  return cases;
}

export async function benchKernels(gpu: Gpu, opts: { quick: boolean; filter?: string }): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  for (const c of kernelCases(opts.quick)) {
    if (opts.filter && !c.name.includes(opts.filter)) continue;
    if (c.needsF16 && !gpu.f16) continue;
    const tc = c.tensorCores;
    if (tc && typeof (tc.direct ? tensorCoreDirectPlan(gpu, tc, 'f32', 'f16', tc.splits, tc.direct === 'staged') : tensorCorePlan(gpu, tc, tc.tile)) === 'string') continue;
    if (c.unavailable?.(gpu)) continue;
    const { run, tensors, verify } = c.setup(gpu);
    try {
      if (verify) {
        run();
        const wrong = await verify();
        if (wrong) throw new Error(`bench ${c.name}: wrong result: ${wrong}`);
      }
      // full runs: rounds of at least 50 ms, so Deno's 11 ms wait for the GPU does not dominate small kernels
      const t = await timePerCall(gpu, run, { calls: DISPATCHES, repeats: REPEATS, minRoundMs: opts.quick ? undefined : MIN_ROUND_MS });
      rows.push(benchRow(gpu, c.name, c.work / t.secondsPerCall / 1e9, c.unit));
      // --timeline: the same rate over GPU busy time, free of the host's cost of recording each call
      if (t.gpuSecondsPerCall) rows.push(benchRow(gpu, `${c.name}_gpu_busy`, c.work / t.gpuSecondsPerCall / 1e9, c.unit));
    } finally {
      for (const t of tensors) t.release();
      gpu.pool.trim();
    }
  }
  return rows;
}
