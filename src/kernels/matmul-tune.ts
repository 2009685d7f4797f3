// Autotuning of matmul's kernel choice on this GPU. For each product a model runs (its linears' x·Wᵀ and dy·W,
// lm_head's too, at a set of row counts) every kernel that can compute it is timed, checked against the f32 result,
// and the fastest kept: the f32 tiles, the tiled tensor cores with each tile, the direct tensor cores with each K
// split. matmul()'s auto policy then takes the table's choice (matmul-tuning.ts), and matmul-tune-store.ts keeps
// the table per adapter. Heuristics picked from measurements on one GPU (H200: bench/RESULTS.md); this measures
// the GPU at hand.
import type { Gpu } from '../gpu/gpu.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { choiceRuns, type MatmulShape, matmulSupports, matmulWith, pickMatmul } from './matmul.ts';
import { TC_TILES, type TcTileName, tensorCoreDirectPlan, tensorCorePlan, tensorCoreUnavailable } from './matmul-tc.ts';
import { choiceName, type MatmulChoice, MatmulTuning, type TunedEntry, TuningError, type TuneShape } from './matmul-tuning.ts';
import { randomNormal } from './random.ts';

const SPLITS = [1, 2, 4, 8] as const;

/** Every kernel choice that computes this product here. */
export function matmulCandidates(gpu: Gpu, s: TuneShape): MatmulChoice[] {
  const out: MatmulChoice[] = [];
  for (const variant of ['rows', 'tile128', 'tile64v', 'tile64'] as const) if (matmulSupports(variant, s)) out.push({ variant });
  if (tensorCoreUnavailable(gpu)) return out;
  for (const tcTile of Object.keys(TC_TILES) as TcTileName[]) {
    if (typeof tensorCorePlan(gpu, s, tcTile) !== 'string') out.push({ variant: 'tc', tcTile });
  }
  for (const tcStaged of [false, true]) {
    for (const tcSplits of SPLITS) {
      if (typeof tensorCoreDirectPlan(gpu, s, s.a, s.b, tcSplits, tcStaged) !== 'string') out.push({ variant: 'tc_direct', tcSplits, tcStaged });
    }
  }
  return out;
}

export interface TuneOptions {
  /** GPU time each timed round aims for (default 4 ms; more where a wait for the GPU is slow, as under Deno). */
  roundMs?: number;
  /** Timed rounds per candidate; their median counts (default 3). */
  rounds?: number;
  /** Called after each product with its entry and how many are done. */
  onShape?: (entry: TunedEntry, done: number, total: number) => void;
}

/** Times every candidate of each shape and returns the table of the fastest. Each candidate's product is first
 * compared with the f32 tiles' on the same inputs (a choice that computes something else is an error, never a pick). */
export async function tuneMatmuls(gpu: Gpu, shapes: readonly TuneShape[], opts: TuneOptions = {}): Promise<MatmulTuning> {
  if (!shapes.length) throw new TuningError('tuneMatmuls: no shapes to tune');
  const wait = await syncSeconds(gpu);
  const roundS = Math.max((opts.roundMs ?? 4) / 1000, 20 * wait);
  const entries: TunedEntry[] = [];
  for (const s of shapes) {
    entries.push(await tuneShape(gpu, s, wait, roundS, opts.rounds ?? 3));
    opts.onShape?.(entries[entries.length - 1]!, entries.length, shapes.length);
  }
  return new MatmulTuning(entries, 'measured');
}

const sameChoice = (x: MatmulChoice, y: MatmulChoice) => choiceName(x) === choiceName(y);

async function tuneShape(gpu: Gpu, s: TuneShape, wait: number, roundS: number, rounds: number): Promise<TunedEntry> {
  const name = `${s.M}x${s.N}x${s.K}${s.transA ? ' aᵀ' : ''}${s.transB ? ' bᵀ' : ''} ${s.a}/${s.b}`;
  const candidates = matmulCandidates(gpu, s);
  const reference = candidates.find((c) => c.variant === 'tile64');
  if (!reference) throw new TuningError(`tune ${name}: no f32 tile to check the other kernels against`);
  const a = randomNormal(gpu, gpu.tensor(s.transA ? [s.K, s.M] : [s.M, s.K], s.a, 'tune.a'), s.M + s.K);
  const b = randomNormal(gpu, gpu.tensor(s.transB ? [s.N, s.K] : [s.K, s.N], s.b, 'tune.b'), s.N + 7 * s.K, 0, 1 / Math.sqrt(s.K));
  const out = gpu.tensor([s.M, s.N], 'f32', 'tune.out');
  const run = (c: MatmulChoice) => matmulWith(gpu, c.variant, a, b, { transA: s.transA, transB: s.transB, out, tcTile: c.tcTile, tcSplits: c.tcSplits, tcStaged: c.tcStaged, label: `tune ${choiceName(c)}` });
  try {
    run(reference);
    const want = await head(gpu, out);
    const auto = pickMatmulAuto(gpu, s);
    for (const c of candidates) {
      run(c);
      const err = relativeError(await head(gpu, out), want);
      if (!(err <= CHECK_TOLERANCE)) throw new TuningError(`tune ${name}: ${choiceName(c)} differs from the f32 tiles by ${err.toExponential(2)} of their largest value (tolerance ${CHECK_TOLERANCE})`);
    }
    const seconds = await timeCandidates(gpu, candidates.map((c) => () => run(c)), wait, roundS, rounds);
    const timed = candidates.map((choice, i) => ({ choice, seconds: seconds[i]! }));
    timed.sort((x, y) => x.seconds - y.seconds);
    const autoSeconds = timed.find((t) => sameChoice(t.choice, auto))?.seconds;
    if (autoSeconds === undefined) throw new TuningError(`tune ${name}: the heuristic's choice ${choiceName(auto)} is not among the candidates`);
    return { ...s, choice: timed[0]!.choice, seconds: timed[0]!.seconds, auto, autoSeconds };
  } finally {
    a.release();
    b.release();
    out.release();
  }
}

/** What matmul's shape heuristic runs for s (any tuning table aside), with the tile or split its plan picks. */
function pickMatmulAuto(gpu: Gpu, s: TuneShape): MatmulChoice {
  const { variant } = pickMatmul(gpu, s, s, false);
  if (variant === 'tc') {
    const plan = tensorCorePlan(gpu, s);
    if (typeof plan !== 'string') return { variant, tcTile: plan.tile };
  }
  if (variant === 'tc_direct') {
    const plan = tensorCoreDirectPlan(gpu, s, s.a, s.b);
    if (typeof plan !== 'string') return { variant, tcSplits: plan.ks, tcStaged: plan.staged };
  }
  return { variant };
}

/** The tensor-core kernels round a and b to f16 (scaled): about 1e-3 of the largest output; a wrong kernel is off by O(1). */
const CHECK_TOLERANCE = 2e-2;
/** Outputs compared: the first this many values (enough to cover every tile of a row block). */
const CHECK_VALUES = 1 << 20;

async function head(gpu: Gpu, out: Tensor): Promise<Float32Array> {
  const n = Math.min(out.size, CHECK_VALUES);
  return new Float32Array(await gpu.readBytes(out.buffer, 0, n * 4, out.label));
}

function relativeError(got: Float32Array, want: Float32Array): number {
  let diff = 0;
  let scale = 0;
  for (let i = 0; i < want.length; i++) {
    diff = Math.max(diff, Math.abs(got[i]! - want[i]!));
    scale = Math.max(scale, Math.abs(want[i]!));
  }
  return scale > 0 ? diff / scale : diff;
}

/** Seconds an empty wait for the GPU takes (the median of five): taken off each timed round. */
async function syncSeconds(gpu: Gpu): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    await gpu.sync();
    times.push((performance.now() - t0) / 1000);
  }
  return times.sort((x, y) => x - y)[2]!;
}

/** Milliseconds of untimed work before a shape's candidates are timed. */
const WARM_MS = 400;

/** GPU seconds per call of each of `runs`, in their order: each round records its calls first and then submits them and waits,
 * so the host's recording is not timed (the rollout records ahead while the GPU runs); calls per round grow 4x
 * until a round takes roundS. The rounds go round-robin over the candidates (a clock that drifts slows them all
 * alike); the median of `rounds` counts. */
async function timeCandidates(gpu: Gpu, runs: readonly (() => void)[], wait: number, roundS: number, rounds: number): Promise<number[]> {
  const round = async (run: () => void, calls: number) => {
    for (let i = 0; i < calls; i++) run();
    const t0 = performance.now();
    await gpu.sync();
    return Math.max((performance.now() - t0) / 1000 - wait, 1e-9);
  };
  // Steady work first: an idle GPU runs at a fraction of its clock and takes about 300 ms of work to reach it (H100,
  // 2026-12-06), so the first candidates' calibration and rounds would otherwise run slow.
  const w0 = performance.now();
  while (performance.now() - w0 < WARM_MS) await round(runs[0]!, 4);
  const calls: number[] = [];
  for (const run of runs) {
    let n = 1;
    while ((await round(run, n)) < roundS && n < 4096) n *= 4;
    calls.push(n);
  }
  const times: number[][] = runs.map(() => []);
  for (let r = 0; r < rounds; r++) {
    for (let i = 0; i < runs.length; i++) times[i]!.push((await round(runs[i]!, calls[i]!)) / calls[i]!);
  }
  return times.map((t) => t.sort((x, y) => x - y)[Math.floor(rounds / 2)]!);
}

/** Checks a table read back (a file, a browser's storage) against this GPU: every choice must be one its kernels
 * can run for the entry's shape. */
export function checkTuning(gpu: Gpu, t: MatmulTuning): void {
  for (const e of t.entries) {
    if (!choiceRuns(gpu, e.choice, e, e)) {
      throw new TuningError(`${t.source}: ${choiceName(e.choice)} cannot compute ${e.M}x${e.N}x${e.K} (${e.a}/${e.b}) on this GPU; delete the file or run troupe tune again`);
    }
  }
}
