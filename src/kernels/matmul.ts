// out[M, N] = alpha·op(a)·op(b) (+ out): the one matmul entry point. Numbered shaders, picked by shape:
//   matmul_rows    M <= 16, b stored [N, K] (decode, x·Wᵀ): memory bound; each weight read once for all rows.
//   matmul_tile128 vec4-aligned operands and enough 128x128 tiles to fill a large GPU: 8x8 outputs/thread.
//   matmul_tile64v vec4-aligned operands, smaller products: 64x64 tile, 4x4 outputs/thread, vec4 loads.
//   matmul_tile64  everything else (any M, N, K, layout): the same tile with scalar bounds-checked loads.
// Both 64-tiles split along K (+ matmul_splitk to sum) when few output tiles face a long K (LoRA grads).
//   tc             tensor cores (src/kernels/matmul-tc.ts), where the device has subgroup matrices: products
//                  of at least 2048 rows that fill the GPU with 128x128 tiles; f16 inputs, f32 accumulation.
//   tc_direct      tensor cores for fewer rows (128 to 2047: decode and rollout batches), x·Wᵀ with f16 W.
// lm_head (a vocabulary of columns) runs tc_direct from 17 rows and tc from 128. A tuned table (troupe tune,
// matmul-tuning.ts) overrides these choices per product where it covers one.
// a and b are f32, or f16 storage when gpu.f16; accumulation and out are f32.
import type { DType } from '../gpu/dtype.ts';
import type { Gpu, ShaderVariant } from '../gpu/gpu.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { Uniforms } from '../gpu/uniforms.ts';
import { expectDtype, expectShape, ShapeError } from './check.ts';
import { ceilDiv, grid1d } from './grid.ts';
import { shuffleConsts, shuffleEnables } from './shuffle.ts';
import { type MatmulChoice, matmulTuning } from './matmul-tuning.ts';
import { type DirectRows, dispatchTensorCore, dispatchTensorCoreDirect, type TcTileName, TensorCoreError, tensorCoreDirectPlan, tensorCorePlan, tensorCoreUnavailable } from './matmul-tc.ts';

export interface MatmulOptions {
  transA?: boolean; // a is stored [K, M]
  transB?: boolean; // b is stored [N, K]  (x·Wᵀ with nn.Linear weights [out, in]: transB = true)
  alpha?: number; // out = alpha·op(a)·op(b) (+ out when accumulate)
  accumulate?: boolean; // out += ...   (LoRA deltas, gradient accumulation)
  out?: Tensor; // f32 [M, N]
  label?: string;
  /** Tile of the tensor-core variant (default: by shape, defaultTcTile). */
  tcTile?: TcTileName;
  /** Subgroups a workgroup of the tc_direct variant, each over a part of K (default: by shape). */
  tcSplits?: number;
  /** tc_direct's version: slices staged in workgroup memory (true) or fragments from storage (default:
   * directStagedDefault, TROUPE_TC_DIRECT). */
  tcStaged?: boolean;
  /** a already cast to f16 rows (castDirectRows) for the tensor-core variants: products that share their input cast
   * it once. Only where tc_direct, or tc with tiledCastsA, runs (pickMatmulVariant says which). */
  x16?: DirectRows;
}

export type MatmulVariant = 'rows' | 'tile128' | 'tile64v' | 'tile64' | 'tc' | 'tc_direct';

export interface MatmulShape {
  M: number;
  N: number;
  K: number;
  transA: boolean;
  transB: boolean;
}

/** Largest M matmul_rows takes (its accumulators: 4 named vec4s, 4 rows each). */
export const ROWS_MAX_M = 16;
/** Output columns per workgroup of matmul_rows. */
const ROWS_COLS_PER_WORKGROUP = 8;
/** Below this many 128x128 tiles a big GPU (132 SMs on an H200) idles: a 64x64 tile gives 4x more workgroups. */
const TILE128_MIN_WORKGROUPS = 128;
/** Tensor cores take a product of at least this many rows, 256 columns and depth, and 128 tiles of 128x128
 * (H200, 2026-12-02: 8x1024-token prefill 1.29x faster than the f32 tiles, but a 512-token prefill 0.64x, and
 * LoRA gradients (few output tiles, long K) belong to split-K f32 tiles). */
const TC_MIN_ROWS = 2048;
const TC_MIN_TILES = 128;
/** Fewer rows than this stay on the f32 tiles (H200, 2026-12-03: at 64 rows matmul_tc_direct ran 0.50-0.98x of
 * them on the Qwen3-0.6B projections, at 256 rows 1.05-1.8x, lm_head 1.6x, at 512 rows 1.7-2.3x). */
const DIRECT_MIN_ROWS = 128;
/** A product with this many columns or more is an lm_head's (a vocabulary). Its x·Wᵀ leaves the f32 tiles from
 * 17 rows on and takes the tiled tensor cores from DIRECT_MIN_ROWS on (H200, 2026-12-04, `troupe tune`: 151936
 * columns at 32-64 rows 3.2x faster on matmul_tc_direct than on the f32 tiles, at 128-1024 rows 1.3x faster tiled
 * than direct). */
const VOCAB_MIN_COLS = 16384;

/** Split-K for the 64-tiles: below this many output tiles, a K of at least SPLIT_MIN_K is cut into slices. */
const SPLIT_MAX_TILES = 64;
const SPLIT_MIN_K = 1024;
/** Workgroups split-K aims for, and the least depth one slice keeps. */
const SPLIT_TARGET_WORKGROUPS = 128;
const SPLIT_MIN_CHUNK = 256;

/** Depth of each K slice of matmul_tile64/tile64v (a multiple of its 16-deep tile) and how many slices there are. */
export function matmulSplit(s: MatmulShape): { splits: number; kChunk: number } {
  const tiles = ceilDiv(s.M, 64) * ceilDiv(s.N, 64);
  if (tiles >= SPLIT_MAX_TILES || s.K < SPLIT_MIN_K) return { splits: 1, kChunk: ceilDiv(s.K, 16) * 16 };
  const wanted = Math.min(ceilDiv(SPLIT_TARGET_WORKGROUPS, tiles), Math.floor(s.K / SPLIT_MIN_CHUNK));
  const kChunk = ceilDiv(ceilDiv(s.K, wanted), 16) * 16;
  return { splits: ceilDiv(s.K, kChunk), kChunk };
}

/** Whether a variant can compute this shape at all. */
export function matmulSupports(v: MatmulVariant, s: MatmulShape): boolean {
  switch (v) {
    case 'rows':
      return s.M <= ROWS_MAX_M && s.transB && !s.transA && s.K % 4 === 0;
    case 'tile128':
    case 'tile64v':
      // each operand is read as vec4 along its stored-contiguous dimension
      return (s.transA ? s.M : s.K) % 4 === 0 && (s.transB ? s.K : s.N) % 4 === 0;
    case 'tile64':
    case 'tc':
      return true;
    case 'tc_direct':
      return s.transB && !s.transA;
  }
}

/** Up to this many rows, products with at most DIRECT_NARROW_COLS columns stay on the f32 tiles: `troupe tune` on the
 * H200 found x·Wᵀ of 128 rows and 1024 columns (k, v, o, down of Qwen3-0.6B) 1.6-4.7x faster on tile64v than on
 * tc_direct (2026-12-04 and 2026-12-05; tc_direct pads 65-127 rows to 128, the f32 tiles do not), while 2048 and
 * 3072 columns (q, gate, up) and 256 rows were fastest on tc_direct. */
const DIRECT_NARROW_MAX_ROWS = 128;
const DIRECT_NARROW_COLS = 1024;

/** Whether matmul's auto policy sends this product (of these operand types) to matmul_tc_direct on `gpu`. */
export function prefersDirectTensorCores(gpu: Gpu, s: MatmulShape, dtypes?: OperandTypes): boolean {
  const vocab = s.N >= VOCAB_MIN_COLS;
  if (!dtypes || s.M < (vocab ? ROWS_MAX_M + 1 : DIRECT_MIN_ROWS) || s.M >= (vocab ? DIRECT_MIN_ROWS : TC_MIN_ROWS)) return false;
  if (!vocab && s.M <= DIRECT_NARROW_MAX_ROWS && s.N <= DIRECT_NARROW_COLS) return false;
  return typeof tensorCoreDirectPlan(gpu, s, dtypes.a, dtypes.b) !== 'string';
}

/** Storage types of matmul's operands: some variants take only some. */
export interface OperandTypes {
  a: DType;
  b: DType;
}

/** Whether matmul's auto policy sends this shape to tensor cores on `gpu`. */
export function prefersTensorCores(gpu: Gpu, s: MatmulShape): boolean {
  if (tensorCoreUnavailable(gpu)) return false;
  const minRows = s.N >= VOCAB_MIN_COLS && s.transB && !s.transA ? DIRECT_MIN_ROWS : TC_MIN_ROWS;
  return s.M >= minRows && s.N >= 256 && s.K >= 256 && ceilDiv(s.M, 128) * ceilDiv(s.N, 128) >= TC_MIN_TILES && typeof tensorCorePlan(gpu, s) !== 'string';
}

/** The variant matmul() runs for this shape. Under SwiftShader the rows kernel runs 5-10x slower than
 * a 64-tile on decode shapes (measured: 335-560 ms vs 60 ms for [1,64]·[160,64]ᵀ), so it is skipped there. */
export function matmulVariant(s: MatmulShape, swiftShader = false): MatmulVariant {
  if (!swiftShader && matmulSupports('rows', s)) return 'rows';
  if (!matmulSupports('tile128', s)) return 'tile64';
  if (s.M > ROWS_MAX_M && ceilDiv(s.M, 128) * ceilDiv(s.N, 128) >= TILE128_MIN_WORKGROUPS) return 'tile128';
  return 'tile64v';
}

/**
 * How matmul() picks its kernel on a device: 'auto' (by shape, tensor cores where the device has them and
 * the product is large; matmul_rows skipped on SwiftShader, see matmulVariant), 'f32' (auto without tensor
 * cores: f32 FMA only), 'gpu' (the f32 choice as on a real GPU, so decode shapes run matmul_rows on the CPU
 * drivers too: what tests use to cover the GPU's decode kernel), or one variant wherever it can compute the
 * shape (by shape elsewhere; 'tc_direct' leaves what it cannot take to auto's choice). The default comes from
 * TROUPE_MATMUL (auto, f32, gpu, rows, tile128, tile64v, tile64, tc, tc_direct).
 */
export type MatmulPolicy = 'auto' | 'f32' | 'gpu' | MatmulVariant;

const POLICIES: readonly MatmulPolicy[] = ['auto', 'f32', 'gpu', 'rows', 'tile128', 'tile64v', 'tile64', 'tc', 'tc_direct'];
const policies = new WeakMap<Gpu, MatmulPolicy>();

/** TROUPE_MATMUL, read once (process.env is slow to read, and matmul asks on every call). */
let fromEnv: MatmulPolicy | undefined;

function envPolicy(): MatmulPolicy {
  if (fromEnv) return fromEnv;
  const v = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.TROUPE_MATMUL;
  if (v === undefined || v === '') return (fromEnv = 'auto');
  if (!(POLICIES as readonly string[]).includes(v)) throw new ShapeError(`TROUPE_MATMUL=${v}: expected one of ${POLICIES.join(', ')}`);
  return (fromEnv = v as MatmulPolicy);
}

/** Sets how matmul() picks its kernel on `gpu` (see MatmulPolicy); returns the previous policy. */
export function setMatmulPolicy(gpu: Gpu, policy: MatmulPolicy): MatmulPolicy {
  if (!POLICIES.includes(policy)) throw new ShapeError(`setMatmulPolicy: unknown policy ${String(policy)} (expected one of ${POLICIES.join(', ')})`);
  const prev = matmulPolicy(gpu);
  policies.set(gpu, policy);
  return prev;
}

export function matmulPolicy(gpu: Gpu): MatmulPolicy {
  return policies.get(gpu) ?? envPolicy();
}

/** The variant matmul() picks on `gpu` for `shape` under its policy (tc_direct only when the operand types are given). */
export function pickMatmulVariant(gpu: Gpu, shape: MatmulShape, dtypes?: OperandTypes): MatmulVariant {
  return pickMatmul(gpu, shape, dtypes).variant;
}

/** The kernel (and its tile or K split) matmul() runs for this product on `gpu`: under the auto policy the tuned
 * choice where a tuning table covers it (setMatmulTuning, src/kernels/matmul-tuning.ts; `tuned` false: never),
 * else by shape. */
export function pickMatmul(gpu: Gpu, shape: MatmulShape, dtypes?: OperandTypes, tuned = true): MatmulChoice {
  const policy = matmulPolicy(gpu);
  if (tuned && policy === 'auto' && dtypes) {
    const choice = matmulTuning(gpu)?.lookup(shape, dtypes);
    if (choice && choiceRuns(gpu, choice, shape, dtypes)) return choice;
  }
  return { variant: heuristicVariant(gpu, policy, shape, dtypes) };
}

/** Whether this choice computes the shape here (a tuned count stands for fewer rows too, which some kernels' plans refuse). */
export function choiceRuns(gpu: Gpu, c: MatmulChoice, s: MatmulShape, t: OperandTypes): boolean {
  if (!matmulSupports(c.variant, s)) return false;
  if (c.variant === 'tc') return typeof tensorCorePlan(gpu, s, c.tcTile) !== 'string';
  if (c.variant === 'tc_direct') return typeof tensorCoreDirectPlan(gpu, s, t.a, t.b, c.tcSplits, c.tcStaged) !== 'string';
  return true;
}

function heuristicVariant(gpu: Gpu, policy: MatmulPolicy, shape: MatmulShape, dtypes?: OperandTypes): MatmulVariant {
  const swiftShader = gpu.report.cpuDriver === 'SwiftShader';
  if (policy === 'auto') {
    if (prefersTensorCores(gpu, shape)) return 'tc';
    return prefersDirectTensorCores(gpu, shape, dtypes) ? 'tc_direct' : matmulVariant(shape, swiftShader);
  }
  if (policy === 'f32') return matmulVariant(shape, swiftShader);
  if (policy === 'gpu') return matmulVariant(shape, false);
  if (policy === 'tc') return tensorCoreUnavailable(gpu) ? matmulVariant(shape, swiftShader) : 'tc';
  if (policy === 'tc_direct') {
    if (dtypes && typeof tensorCoreDirectPlan(gpu, shape, dtypes.a, dtypes.b) !== 'string') return 'tc_direct';
    return prefersTensorCores(gpu, shape) ? 'tc' : matmulVariant(shape, swiftShader);
  }
  return matmulSupports(policy, shape) ? policy : matmulVariant(shape, swiftShader);
}

/** Whether matmulRowsParts can take a [M, K] against these weights ([N_i, K] each) on `gpu`: matmul() would run
 *  matmul_rows for every one of them (decode shapes on a GPU, or the 'gpu' / 'rows' policies). */
export function rowsPartsApply(gpu: Gpu, a: Tensor, weights: readonly Tensor[]): boolean {
  return weights.length >= 2 && rowsProducts(gpu, a, weights);
}

/** Whether matmulRowsNorm can take x [M, K] with a norm weight [K] against these 1-3 weights: rowsPartsApply's
 *  conditions (one weight allowed), an f32 norm weight of K entries, and a storage-buffer limit that binds it. */
export function rowsNormApplies(gpu: Gpu, x: Tensor, norm: Tensor, weights: readonly Tensor[]): boolean {
  const buffers = 3 + 2 * (weights.length - 1) + 1;
  return rowsProducts(gpu, x, weights) && x.dtype === 'f32' && norm.dtype === 'f32' && norm.shape.length === 1 && norm.shape[0] === x.shape[1] && gpu.limits.maxStorageBuffersPerShaderStage >= buffers;
}

function rowsProducts(gpu: Gpu, a: Tensor, weights: readonly Tensor[]): boolean {
  if (a.shape.length !== 2 || weights.length < 1 || weights.length > 3) return false;
  const [M, K] = a.shape as [number, number];
  return weights.every((w) => w.shape.length === 2 && w.shape[1] === K && w.dtype === weights[0]!.dtype && pickMatmulVariant(gpu, { M, N: w.shape[0]!, K, transA: false, transB: true }) === 'rows');
}

/** out_i [M, N_i] = a·W_iᵀ for two or three weights (q, k, v; gate, up) in one matmul_rows dispatch: the numbers
 *  of separate matmul() calls on that kernel, one dispatch instead of two or three. */
export function matmulRowsParts(gpu: Gpu, a: Tensor, weights: readonly Tensor[], labels: readonly string[]): Tensor[] {
  const name = `matmul_rows(${labels.join(',')})`;
  if (!rowsPartsApply(gpu, a, weights)) {
    throw new ShapeError(`${name}: ${a.label} [${a.shape}] with weights ${weights.map((w) => `[${w.shape}]`).join(', ')} is not a matmul_rows product of 2-3 parts here`);
  }
  return dispatchRowsParts(gpu, name, a, weights, labels, null);
}

/** out_i [M, N_i] = rmsnorm(x)·W_iᵀ for one to three weights in one matmul_rows dispatch, where rmsnorm(x) =
 *  x·rsqrt(mean(x²) + eps)·norm (rmsnorm.wgsl's): the norm before q/k/v, gate/up or lm_head read inside their
 *  product, so it needs no pass and no tensor of its own (decode shapes without an adapter, which needs the
 *  normed input). */
export function matmulRowsNorm(gpu: Gpu, x: Tensor, norm: Tensor, eps: number, weights: readonly Tensor[], labels: readonly string[]): Tensor[] {
  const name = `matmul_rows(rmsnorm, ${labels.join(',')})`;
  if (!rowsNormApplies(gpu, x, norm, weights)) {
    throw new ShapeError(`${name}: ${x.label} [${x.shape}] (${x.dtype}) with norm ${norm.label} [${norm.shape}] (${norm.dtype}) and weights ${weights.map((w) => `[${w.shape}]`).join(', ')} is not a normed matmul_rows product here`);
  }
  if (!(eps >= 0)) throw new ShapeError(`${name}: eps ${eps} must be a non-negative number`);
  return dispatchRowsParts(gpu, name, x, weights, labels, { norm, eps });
}

/** matmul_rows's variant: its 32-lane sums by subgroup shuffles where subgroups exist (shuffle.ts). */
function rowsVariant(gpu: Gpu, ta: DType, tb: DType, consts: Record<string, number | boolean>): ShaderVariant {
  const shuffles = shuffleConsts(gpu);
  return { aliases: { TA: ta, TB: tb }, enables: shuffleEnables(shuffles), consts: { ...consts, ...shuffles } };
}

function dispatchRowsParts(gpu: Gpu, name: string, a: Tensor, weights: readonly Tensor[], labels: readonly string[], norm: { norm: Tensor; eps: number } | null): Tensor[] {
  if (labels.length !== weights.length) throw new ShapeError(`${name}: ${labels.length} labels for ${weights.length} weights`);
  expectDtype(name, a, 'f32', 'f16');
  expectDtype(name, weights[0]!, 'f32', 'f16');
  if ((a.dtype === 'f16' || weights[0]!.dtype === 'f16') && !gpu.f16) throw new ShapeError(`${name}: f16 operands need the shader-f16 feature, which this device lacks`);
  const [M, K] = a.shape as [number, number];
  const outs = weights.map((w, i) => gpu.tensor([M, w.shape[0]!], 'f32', `${labels[i]}.out`));
  const N = weights.map((w) => w.shape[0]!);
  gpu.dispatch({
    shader: 'matmul_rows',
    variant: rowsVariant(gpu, a.dtype, weights[0]!.dtype, { ROWS: M, MULTI: weights.length > 1, THREE: weights.length === 3, GLU: false, NORM: norm !== null }),
    uniforms: new Uniforms().u32(M).u32(N[0]!).u32(K).u32(0).f32(1).u32(N[1] ?? 0).u32(N[2] ?? 0).f32(norm?.eps ?? 0),
    bindings: [a, weights[0]!, outs[0]!, weights[1] ?? null, outs[1] ?? null, weights[2] ?? null, outs[2] ?? null, null, norm?.norm ?? null],
    workgroups: [N.reduce((sum, n) => sum + ceilDiv(n, ROWS_COLS_PER_WORKGROUP), 0)],
    label: name,
  });
  return outs;
}

/** Whether matmulRowsGlu applies: gate and up of one shape and dtype, and down·(silu(gate)·up) a product matmul()
 *  would give to matmul_rows on this device (decode shapes: at most 16 rows, on a GPU). */
export function rowsGluApplies(gpu: Gpu, gate: Tensor, up: Tensor, down: Tensor): boolean {
  if (gate.shape.length !== 2 || down.shape.length !== 2 || gate.dtype !== up.dtype) return false;
  if (up.shape.length !== 2 || up.shape[0] !== gate.shape[0] || up.shape[1] !== gate.shape[1]) return false;
  const [M, K] = gate.shape as [number, number];
  return down.shape[1] === K && pickMatmulVariant(gpu, { M, N: down.shape[0]!, K, transA: false, transB: true }) === 'rows';
}

/** out [M, N] = (silu(gate) · up)·downᵀ in one matmul_rows dispatch: the MLP's SwiGLU read inside down_proj's
 *  product (gate, up [M, K]; down [N, K]), the numbers of swiglu() then matmul() on that kernel. With `into`
 *  (f32 [M, N]) the product is added to it there (a residual stream) instead of written to a new tensor. */
export function matmulRowsGlu(gpu: Gpu, gate: Tensor, up: Tensor, down: Tensor, label = 'down_proj', into?: Tensor): Tensor {
  const name = `matmul_rows(swiglu, ${label})`;
  if (!rowsGluApplies(gpu, gate, up, down)) {
    throw new ShapeError(`${name}: ${gate.label} [${gate.shape}], ${up.label} [${up.shape}] with weight [${down.shape}] is not a matmul_rows SwiGLU product here`);
  }
  expectDtype(name, gate, 'f32', 'f16');
  expectDtype(name, down, 'f32', 'f16');
  if ((gate.dtype === 'f16' || down.dtype === 'f16') && !gpu.f16) throw new ShapeError(`${name}: f16 operands need the shader-f16 feature, which this device lacks`);
  const [M, K] = gate.shape as [number, number];
  const N = down.shape[0]!;
  if (into) {
    expectDtype(name, into, 'f32');
    expectShape(name, into, [M, N]);
    if ([gate, up, down].some((t) => t.buffer === into.buffer)) throw new ShapeError(`${name}: ${into.label} aliases an input`);
  }
  const out = into ?? gpu.tensor([M, N], 'f32', `${label}.out`);
  gpu.dispatch({
    shader: 'matmul_rows',
    variant: rowsVariant(gpu, gate.dtype, down.dtype, { ROWS: M, MULTI: false, THREE: false, GLU: true, NORM: false }),
    uniforms: new Uniforms().u32(M).u32(N).u32(K).u32(into ? 1 : 0).f32(1).u32(0).u32(0).u32(0),
    bindings: [gate, down, out, null, null, null, null, up],
    workgroups: [ceilDiv(N, ROWS_COLS_PER_WORKGROUP)],
    label: name,
  });
  return out;
}

export function matmul(gpu: Gpu, a: Tensor, b: Tensor, opts: MatmulOptions = {}): Tensor {
  return matmulWith(gpu, null, a, b, opts);
}

/** matmul on a chosen variant (null: by shape); for tests and benchmarks of each variant. */
export function matmulWith(gpu: Gpu, variant: MatmulVariant | null, a: Tensor, b: Tensor, opts: MatmulOptions = {}): Tensor {
  const name = opts.label ?? 'matmul';
  const transA = opts.transA ?? false;
  const transB = opts.transB ?? false;
  if (a.shape.length !== 2) throw new ShapeError(`${name}: ${a.label} has shape [${a.shape}], expected 2-D`);
  if (b.shape.length !== 2) throw new ShapeError(`${name}: ${b.label} has shape [${b.shape}], expected 2-D`);
  expectDtype(name, a, 'f32', 'f16');
  expectDtype(name, b, 'f32', 'f16');
  if ((a.dtype === 'f16' || b.dtype === 'f16') && !gpu.f16) {
    throw new ShapeError(`${name}: f16 operands need the shader-f16 feature, which this device lacks`);
  }
  const [M, Ka] = transA ? [a.shape[1]!, a.shape[0]!] : [a.shape[0]!, a.shape[1]!];
  const [Kb, N] = transB ? [b.shape[1]!, b.shape[0]!] : [b.shape[0]!, b.shape[1]!];
  if (Ka !== Kb) {
    throw new ShapeError(
      `${name}: inner dimensions differ: ${a.label} [${a.shape}]${transA ? 'ᵀ' : ''} · ${b.label} [${b.shape}]${transB ? 'ᵀ' : ''}`,
    );
  }
  const K = Ka;
  if (M < 1 || N < 1 || K < 1) throw new ShapeError(`${name}: empty product ${M}x${N}x${K}`);
  if (opts.accumulate && !opts.out) throw new ShapeError(`${name}: accumulate needs opts.out`);
  const out = opts.out ?? gpu.tensor([M, N], 'f32', `${name}.out`);
  expectDtype(name, out, 'f32');
  expectShape(name, out, [M, N]);
  if (out.buffer === a.buffer || out.buffer === b.buffer) throw new ShapeError(`${name}: ${out.label} aliases an input`);

  const shape = { M, N, K, transA, transB };
  const picked: MatmulChoice = variant ? { variant } : pickMatmul(gpu, shape, { a: a.dtype, b: b.dtype });
  const v = picked.variant;
  if (!matmulSupports(v, shape)) throw new ShapeError(`${name}: variant ${v} cannot compute ${M}x${N}x${K} (transA ${transA}, transB ${transB})`);
  if (opts.x16 && v !== 'tc_direct' && v !== 'tc') throw new ShapeError(`${name}: f16 rows of ${opts.x16.source.label} were given, but ${M}x${N}x${K} runs on ${v}, not on tensor cores`);
  const dispatch = (target: Tensor, uniforms: Uniforms, workgroups: readonly [number, number?, number?]) =>
    gpu.dispatch({
      shader: `matmul_${v}`,
      variant: v === 'rows' ? rowsVariant(gpu, a.dtype, b.dtype, { ROWS: M, MULTI: false, THREE: false, GLU: false, NORM: false }) : { aliases: { TA: a.dtype, TB: b.dtype }, consts: { TRANS_A: transA, TRANS_B: transB } },
      uniforms,
      bindings: [a, b, target],
      workgroups,
      label: name,
    });
  const params = (accumulate: boolean, alpha: number, kChunk: number) =>
    new Uniforms().u32(M).u32(N).u32(K).u32(accumulate ? 1 : 0).f32(alpha).u32(kChunk).u32(0).u32(0);
  const accumulate = opts.accumulate ?? false;
  const alpha = opts.alpha ?? 1;
  if (v === 'tc') {
    const plan = tensorCorePlan(gpu, shape, opts.tcTile ?? picked.tcTile);
    if (typeof plan === 'string') throw new TensorCoreError(`${name}: cannot run ${M}x${N}x${K} on tensor cores here: ${plan}`);
    dispatchTensorCore(gpu, plan, a, b, out, shape, alpha, accumulate, name, opts.x16);
  } else if (v === 'tc_direct') {
    const plan = tensorCoreDirectPlan(gpu, shape, a.dtype, b.dtype, opts.tcSplits ?? picked.tcSplits, opts.tcStaged ?? picked.tcStaged);
    if (typeof plan === 'string') throw new TensorCoreError(`${name}: cannot run ${M}x${N}x${K} on direct tensor cores here: ${plan}`);
    dispatchTensorCoreDirect(gpu, plan, a, b, out, shape, alpha, accumulate, name, opts.x16);
  } else if (v === 'rows') {
    dispatch(out, params(accumulate, alpha, 0), [ceilDiv(N, ROWS_COLS_PER_WORKGROUP)]);
  } else if (v === 'tile128') {
    dispatch(out, params(accumulate, alpha, 0), [ceilDiv(N, 128), ceilDiv(M, 128)]);
  } else {
    const { splits, kChunk } = matmulSplit(shape);
    if (splits === 1) {
      dispatch(out, params(accumulate, alpha, kChunk), [ceilDiv(N, 64), ceilDiv(M, 64)]);
    } else {
      const partial = gpu.tensor([splits, M, N], 'f32', `${name}.splitk`);
      dispatch(partial, params(false, 1, kChunk), [ceilDiv(N, 64), ceilDiv(M, 64), splits]);
      gpu.dispatch({
        shader: 'matmul_splitk',
        uniforms: new Uniforms().u32(M * N).u32(splits).u32(accumulate ? 1 : 0).f32(alpha),
        bindings: [partial, out],
        workgroups: grid1d(ceilDiv(M * N, 256)),
        label: `${name}.splitk`,
      });
      partial.release(); // later users of the buffer are ordered after these dispatches
    }
  }
  return out;
}
