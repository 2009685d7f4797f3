// The tensor-core path of matmul() (src/kernels/matmul.ts, variant 'tc'): out = alpha·op(a)·op(b) (+ out)
// through subgroup matrices (shaders/matmul_tc_tiled.wgsl), any shape and layout, f32 or f16 operands.
// f32 operands are scaled per row / column by a power of two first (shaders/absmax_scale.wgsl), so their
// f16 copies keep 11 significant bits whatever their magnitude. Needs the `subgroups` and
// `chromium-experimental-subgroup-matrix` features (Dawn; wgpu/Deno has no such extension), shader-f16, a
// fixed subgroup size and an f16 x f16 -> f32 config; tensorCorePlan says why not otherwise, so callers
// keep the f32 kernels. Versions 1 (fragments straight from storage) and 2 (32-deep slices, whole tiles
// only) were measured in bench/RESULTS.md (3-7% of cuBLAS) and replaced by this one.
// Batches of rows too few for 128-row tiles (decode, rollouts) take shaders/matmul_tc_direct.wgsl instead
// (variant 'tc_direct'): x·Wᵀ with f16 W, x cast to f16 with its row scales first, K split across a workgroup's
// subgroups, fragments loaded straight from storage (version 1) or from slices staged in workgroup memory by
// 16-byte loads (version 2, `staged`).
import type { DType } from '../gpu/dtype.ts';
import type { BufferSlice, Gpu, SubgroupMatrixConfig } from '../gpu/gpu.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { Uniforms, u32s } from '../gpu/uniforms.ts';
import { ShapeError } from './check.ts';
import { ceilDiv, grid1d } from './grid.ts';

/** A workgroup tile: wgm x wgn subgroups of 4 x 4 fragments each (64 x 64 outputs with 16 x 16 fragments)
 * and kt-deep slices of op(a)/op(b) in workgroup memory, one staged at a time or two (stages: the next staged
 * while the current is multiplied, one barrier a slice instead of two). */
export interface TcTile {
  wgm: number;
  wgn: number;
  kt: number;
  stages: 1 | 2;
}

/** Named by their outputs with 16 x 16 fragments (the H200's), k<slice depth>, and d where two slices are staged. */
export const TC_TILES = {
  '128x128k16': { wgm: 2, wgn: 2, kt: 16, stages: 1 },
  '128x128k32': { wgm: 2, wgn: 2, kt: 32, stages: 1 },
  '256x128k16': { wgm: 4, wgn: 2, kt: 16, stages: 1 },
  '128x256k16': { wgm: 2, wgn: 4, kt: 16, stages: 1 },
  '64x128k16': { wgm: 1, wgn: 2, kt: 16, stages: 1 },
  '128x64k16': { wgm: 2, wgn: 1, kt: 16, stages: 1 },
  '64x64k16': { wgm: 1, wgn: 1, kt: 16, stages: 1 },
  '128x128k16d': { wgm: 2, wgn: 2, kt: 16, stages: 2 },
  '128x128k32d': { wgm: 2, wgn: 2, kt: 32, stages: 2 },
  '256x128k16d': { wgm: 4, wgn: 2, kt: 16, stages: 2 },
  '128x256k16d': { wgm: 2, wgn: 4, kt: 16, stages: 2 },
  '64x128k16d': { wgm: 1, wgn: 2, kt: 16, stages: 2 },
} as const satisfies Record<string, TcTile>;
export type TcTileName = keyof typeof TC_TILES;

/** Fragments per subgroup along M and N (the shader's named accumulators). */
const FRAGS = 4;
/** Staged rows are padded by this many f16, except rows along K of 16-deep slices (as PAD and PAD_K in the shader). */
const PAD = 8;
const padK = (kt: number) => (kt === 16 ? 0 : PAD);

export interface TcShape {
  M: number;
  N: number;
  K: number;
  transA: boolean;
  transB: boolean;
}

export interface TcPlan {
  tile: TcTileName;
  config: SubgroupMatrixConfig;
  subgroupSize: number;
  /** Outputs per workgroup. */
  bm: number;
  bn: number;
}

/** Bytes of workgroup memory a tile takes (staged slices of op(a) and op(b), and one result fragment per subgroup). */
export function tcTileBytes(t: TcTile, shape: Pick<TcShape, 'transA' | 'transB'>, c: SubgroupMatrixConfig): number {
  const [bm, bn] = [t.wgm * FRAGS * c.M, t.wgn * FRAGS * c.N];
  const a = shape.transA ? t.kt * (bm + PAD) : bm * (t.kt + padK(t.kt));
  const b = shape.transB ? bn * (t.kt + padK(t.kt)) : t.kt * (bn + PAD);
  return 2 * t.stages * (a + b) + 4 * t.wgm * t.wgn * c.M * c.N;
}

/** Why the device cannot run tensor-core products at all, or null when it can. */
export function tensorCoreUnavailable(gpu: Gpu): string | null {
  const sg = gpu.report.subgroups;
  if (!sg) return 'no subgroups feature';
  if (sg.minSize !== sg.maxSize) return `subgroup size varies (${sg.minSize}-${sg.maxSize})`;
  if (!gpu.f16) return 'no shader-f16 feature';
  if (gpu.report.subgroupMatrixRefused) return gpu.report.subgroupMatrixRefused;
  if (!gpu.report.subgroupMatrixConfigs.some((c) => c.componentType === 'f16' && c.resultComponentType === 'f32')) {
    return 'no f16 x f16 -> f32 subgroup matrix config';
  }
  return null;
}

/** Depth from which dy·W (b [K, N]) takes 32-deep slices: `troupe tune` found them 1.5x faster on lm_head's dy·W
 * (K 151936, H200, 2026-12-04: half the barriers of a long K loop), while at a projection's depth the 16-deep tile,
 * unpadded since 2026-12-06, is 1.05-1.08x faster (down_proj dy·W, H100). */
const DEEP_K = 16384;

/** The default tile for an M x N x K product: the largest whose workgroups still cover a big GPU (132 SMs on an H200);
 * 32-deep slices for dy·W over a long K (DEEP_K). */
export function defaultTcTile(M: number, N: number, K: number, transB = true): TcTileName {
  const enough = (bm: number, bn: number) => ceilDiv(M, bm) * ceilDiv(N, bn) >= 128;
  if (enough(128, 128)) return transB || K < DEEP_K ? '128x128k16' : '128x128k32';
  if (enough(64, 128) && N >= M) return '64x128k16';
  if (enough(128, 64)) return '128x64k16';
  return '64x64k16';
}

/** How a product runs on tensor cores here, or the reason it cannot. */
export function tensorCorePlan(gpu: Gpu, s: TcShape, tile: TcTileName = defaultTcTile(s.M, s.N, s.K, s.transB)): TcPlan | string {
  const why = tensorCoreUnavailable(gpu);
  if (why) return why;
  const t: TcTile = TC_TILES[tile];
  const subgroupSize = gpu.report.subgroups!.maxSize;
  const threads = t.wgm * t.wgn * subgroupSize;
  // The largest f16 -> f32 fragments whose depth divides the slice.
  const config = largestConfig(gpu, t.kt);
  if (!config) return `no subgroup matrix config fits tile ${tile}`;
  const [bm, bn] = [t.wgm * FRAGS * config.M, t.wgn * FRAGS * config.N];
  // With vec4 loads each thread makes 1, 2, 4 or 8 of each slice (the shader's named registers).
  const unitsOk = (n: number) => n % (4 * threads) === 0 && [1, 2, 4, 8].includes(n / (4 * threads));
  if (!unitsOk(bm * t.kt) || !unitsOk(bn * t.kt)) return `tile ${tile} does not divide into 1, 2, 4 or 8 vec4 loads for each of ${threads} threads`;
  if (threads > gpu.limits.maxComputeInvocationsPerWorkgroup) return `tile ${tile} needs ${threads} invocations`;
  const bytes = tcTileBytes(t, s, config);
  if (bytes > gpu.limits.maxComputeWorkgroupStorageSize) return `tile ${tile} needs ${bytes} bytes of workgroup memory (limit ${gpu.limits.maxComputeWorkgroupStorageSize})`;
  const maxWg = gpu.limits.maxComputeWorkgroupsPerDimension;
  if (ceilDiv(s.N, bn) > maxWg || ceilDiv(s.M, bm) > maxWg) return `${s.M}x${s.N} needs more than ${maxWg} workgroups a dimension`;
  return { tile, config, subgroupSize, bm, bn };
}

/** Per device and slice depth (0: any): the adapter's configs never change, and matmul asks on every call. */
const largest = new WeakMap<Gpu, Map<number, SubgroupMatrixConfig | undefined>>();

/** The f16 x f16 -> f32 config with the most products per fragment (whose depth divides `depthDivides`, unless 0). */
function largestConfig(gpu: Gpu, depthDivides = 0): SubgroupMatrixConfig | undefined {
  let byDepth = largest.get(gpu);
  if (!byDepth) largest.set(gpu, (byDepth = new Map()));
  if (!byDepth.has(depthDivides)) {
    const config = gpu.report.subgroupMatrixConfigs
      .filter((c) => c.componentType === 'f16' && c.resultComponentType === 'f32' && (depthDivides === 0 || depthDivides % c.K === 0))
      .sort((x, y) => y.M * y.N * y.K - x.M * x.N * x.K)[0];
    byDepth.set(depthDivides, config);
  }
  return byDepth.get(depthDivides);
}

/** How x·Wᵀ runs on matmul_tc_direct. */
export interface TcDirectPlan {
  config: SubgroupMatrixConfig;
  subgroupSize: number;
  /** Subgroups of a workgroup, each over a part of K for the same output tile. */
  ks: number;
  /** Depth each subgroup covers (version 1: one contiguous part; staged: an SK-deep part of each KS·SK slice). */
  kPart: number;
  /** Version 2: fragments from slices staged in workgroup memory, not straight from storage. */
  staged: boolean;
  /** Outputs per workgroup, and M padded to whole tiles (the rows of the f16 copy of x). */
  bm: number;
  bn: number;
  mp: number;
}

/** Subgroups in flight that matmul_tc_direct's K split aims for (an H200 has 132 SMs): the least split that reaches
 * it is the one `troupe tune` measured fastest on every Qwen3-0.6B projection at 256-1024 rows (H200, 2026-12-04;
 * 512, the earlier figure, gave half the split on most and ran them 1.1-1.2x slower). */
const DIRECT_SUBGROUPS = 768;
const DIRECT_MAX_KS = 8;
/** The staged version's split stays at 4 unless asked: 8 subgroups stage 128-deep slices, 43 KiB of workgroup memory,
 * past the ~24 KiB from which an H100 ran the tiled kernel 1.6-1.8x slower (bench/RESULTS.md, 2026-12-06). */
const STAGED_DEFAULT_MAX_KS = 4;
/** The least depth a subgroup of matmul_tc_direct keeps (8 steps of 16). */
const DIRECT_MIN_KPART = 128;
/** Staged rows' padding, in halves (LD in the shader). */
const STAGED_PAD = 8;

/** Whether the environment variable `name` is set to `yes` (else unset, empty or `no`), read once. */
const envFlags = new Map<string, boolean>();
function envFlag(name: string, yes: string, no: string): boolean {
  let flag = envFlags.get(name);
  if (flag === undefined) {
    const v = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.[name];
    if (v !== undefined && v !== '' && v !== yes && v !== no) throw new ShapeError(`${name}=${v}: expected ${yes} or ${no}`);
    envFlags.set(name, (flag = v === yes));
  }
  return flag;
}

/** Whether matmul_tc_direct stages its slices (version 2) unless a choice says otherwise: TROUPE_TC_DIRECT=staged or
 * storage (version 1, the default). */
export function directStagedDefault(): boolean {
  return envFlag('TROUPE_TC_DIRECT', 'staged', 'storage');
}

/** Rows of x as matmul_tc_direct reads it: M padded to whole tiles of FRAGS fragments. */
function directPaddedRows(M: number, config: SubgroupMatrixConfig): number {
  const bm = FRAGS * config.M;
  return ceilDiv(M, bm) * bm;
}

/** Bytes of workgroup memory matmul_tc_direct takes with ks subgroups: one result fragment each, and (staged) the
 * slices of x and W. */
export function directBytes(ks: number, staged: boolean, c: SubgroupMatrixConfig): number {
  const slices = staged ? 2 * FRAGS * c.M * (ks * c.K + STAGED_PAD) * 2 : 0;
  return slices + 4 * ks * c.M * c.N;
}

/** How a x [M, K] f32 · W [N, K]ᵀ f16 product runs on matmul_tc_direct here, or the reason it cannot; `splits`
 * fixes the subgroups a workgroup (1, 2, 4 or 8; default: by shape), `staged` the version (default:
 * directStagedDefault()). */
export function tensorCoreDirectPlan(gpu: Gpu, s: TcShape, da: DType, db: DType, splits?: number, staged = directStagedDefault()): TcDirectPlan | string {
  const why = tensorCoreUnavailable(gpu);
  if (why) return why;
  if (s.transA || !s.transB) return 'direct tensor cores take x·Wᵀ only (a [M, K], b [N, K])';
  if (da !== 'f32' || db !== 'f16') return `direct tensor cores take f32 x and f16 W, not ${da} and ${db}`;
  const config = largestConfig(gpu)!;
  const [bm, bn] = [FRAGS * config.M, FRAGS * config.N];
  if (s.N % bn !== 0) return `N ${s.N} is not a multiple of ${bn}`;
  if (s.K % config.K !== 0 || s.K % 2 !== 0) return `K ${s.K} is not a multiple of ${config.K} (and even)`;
  const mp = directPaddedRows(s.M, config);
  const tiles = (mp / bm) * (s.N / bn);
  const subgroupSize = gpu.report.subgroups!.maxSize;
  // Staged: each thread makes 4 of a slice's 16-byte loads of x and of W (the shader's named registers).
  if (staged && (config.M !== config.N || config.M * config.K !== 8 * subgroupSize)) {
    return `staged direct tensor cores need square fragments of 8 x ${subgroupSize} elements (subgroups of ${subgroupSize}), not ${config.M}x${config.N}x${config.K}`;
  }
  // The epilogue gives each thread whole elements of a fragment: at most M·N threads a workgroup.
  const maxKs = Math.min(DIRECT_MAX_KS, Math.floor((config.M * config.N) / subgroupSize));
  // A split of ks needs whole SK-deep steps in each of its ks parts (staged: whole ks·SK-deep slices, the same).
  const divides = (ks: number) => s.K % (ks * config.K) === 0;
  let ks = 1;
  while (ks < Math.min(maxKs, staged ? STAGED_DEFAULT_MAX_KS : maxKs) && tiles * ks < DIRECT_SUBGROUPS && divides(2 * ks) && s.K / (2 * ks) >= DIRECT_MIN_KPART) ks *= 2;
  if (splits !== undefined) {
    if (![1, 2, 4, 8].includes(splits) || !divides(splits)) return `K ${s.K} does not split into ${splits} parts of whole ${config.K}-deep steps`;
    if (splits > maxKs) return `${splits} subgroups of ${subgroupSize} are more threads than a ${config.M}x${config.N} fragment has elements`;
    ks = splits;
  }
  if (ks * subgroupSize > gpu.limits.maxComputeInvocationsPerWorkgroup) return `${ks} subgroups of ${subgroupSize} exceed the workgroup's invocations`;
  const bytes = directBytes(ks, staged, config);
  if (bytes > gpu.limits.maxComputeWorkgroupStorageSize) return `${ks} subgroups${staged ? ' staged' : ''} need ${bytes} bytes of workgroup memory (limit ${gpu.limits.maxComputeWorkgroupStorageSize})`;
  const maxWg = gpu.limits.maxComputeWorkgroupsPerDimension;
  if (s.N / bn > maxWg || mp / bm > maxWg) return `${s.M}x${s.N} needs more than ${maxWg} workgroups a dimension`;
  return { config, subgroupSize, ks, kPart: s.K / ks, staged, bm, bn, mp };
}

/** x [M, K] f32 as matmul_tc_direct (and the tiled kernel, tiledCastsA) reads it: cast to f16 with power-of-two row
 * scales, padded with zero rows to whole tiles (mp rows). Products that share their input (q, k, v; gate, up) cast
 * it once (MatmulOptions.x16); release() once the last of them is recorded. */
export interface DirectRows {
  readonly source: Tensor;
  readonly x16: Tensor;
  readonly scale: Tensor;
  readonly mp: number;
  release(): void;
}

export function castDirectRows(gpu: Gpu, x: Tensor, label: string): DirectRows {
  const { M, K, mp, x16, scale } = directRowsOf(gpu, x, label);
  gpu.dispatch({
    shader: 'absmax_scale',
    entry: 'rows_f16',
    uniforms: u32s(M, K, mp, 0),
    bindings: [x, scale, x16],
    workgroups: grid1d(mp),
    label: `${label}.x16`,
  });
  return directRows(x, x16, scale, mp);
}

/** y = rmsnorm(x)·norm (f32 [M, K], as rmsnorm()'s y) and its rows cast as castDirectRows(y) would, in one pass: the
 * norm before products that run on tensor cores. The caller releases y and the rows. */
export function castNormedRows(gpu: Gpu, x: Tensor, norm: Tensor, eps: number, label: string): { y: Tensor; rows: DirectRows } {
  if (norm.dtype !== 'f32' || norm.shape.length !== 1 || norm.shape[0] !== x.shape.at(-1)) {
    throw new TensorCoreError(`${label}: the norm weight ${norm.label} ${norm.dtype} [${norm.shape}] does not match the rows of ${x.label} [${x.shape}]`);
  }
  if (!(eps >= 0)) throw new TensorCoreError(`${label}: eps ${eps} must be a non-negative number`);
  const { M, K, mp, x16, scale } = directRowsOf(gpu, x, label);
  const y = gpu.tensor([M, K], 'f32', `${label}.normed`);
  gpu.dispatch({
    shader: 'absmax_scale',
    entry: 'rows_f16_norm',
    uniforms: new Uniforms().u32(M).u32(K).u32(mp).f32(eps),
    bindings: [x, scale, x16, norm, y],
    workgroups: grid1d(mp),
    label: `${label}.norm_x16`,
  });
  return { y, rows: directRows(y, x16, scale, mp) };
}

/** act = silu(gate)·up (f32 [M, I], as swiglu()'s h, bit for bit) and its rows cast as castDirectRows(act) would, in
 * one pass: SwiGLU before a down_proj on tensor cores. The caller releases act and the rows. */
export function castGluRows(gpu: Gpu, gate: Tensor, up: Tensor, label: string): { y: Tensor; rows: DirectRows } {
  if (up.dtype !== gate.dtype || up.shape.length !== gate.shape.length || up.shape.some((d, i) => d !== gate.shape[i])) {
    throw new TensorCoreError(`${label}: up ${up.label} ${up.dtype} [${up.shape}] does not match gate ${gate.label} ${gate.dtype} [${gate.shape}]`);
  }
  const { M, K, mp, x16, scale } = directRowsOf(gpu, gate, label);
  const y = gpu.tensor([M, K], 'f32', `${label}.act`);
  gpu.dispatch({
    shader: 'absmax_scale',
    entry: 'rows_f16_glu',
    uniforms: u32s(M, K, mp, 0),
    bindings: [gate, scale, x16, up, y],
    workgroups: grid1d(mp),
    label: `${label}.glu_x16`,
  });
  return { y, rows: directRows(y, x16, scale, mp) };
}

/** Checks x for a cast to f16 rows and allocates them. */
function directRowsOf(gpu: Gpu, x: Tensor, label: string): { M: number; K: number; mp: number; x16: Tensor; scale: Tensor } {
  const why = tensorCoreUnavailable(gpu);
  if (why) throw new TensorCoreError(`${label}: cannot cast ${x.label} for direct tensor cores: ${why}`);
  if (x.dtype !== 'f32' || x.shape.length !== 2) throw new TensorCoreError(`${label}: direct tensor cores cast f32 [M, K] rows, not ${x.label} ${x.dtype} [${x.shape}]`);
  const [M, K] = x.shape as [number, number];
  if (K % 2 !== 0) throw new TensorCoreError(`${label}: ${x.label} has an odd K ${K}: f16 rows pack two halves a word`);
  const mp = directPaddedRows(M, largestConfig(gpu)!);
  return { M, K, mp, x16: gpu.tensor([mp, K], 'f16', `${label}.x16`), scale: gpu.tensor([mp], 'f32', `${label}.scale_x`) };
}

function directRows(source: Tensor, x16: Tensor, scale: Tensor, mp: number): DirectRows {
  return {
    source,
    x16,
    scale,
    mp,
    release: () => {
      // Later users of the buffers are ordered after the dispatches that read them.
      x16.release();
      scale.release();
    },
  };
}

/** out = alpha·x·Wᵀ (+ out) on matmul_tc_direct; shapes already checked by matmul(). `rows`: x already cast
 * (castDirectRows of this x), else it is cast here. */
export function dispatchTensorCoreDirect(gpu: Gpu, plan: TcDirectPlan, x: Tensor, w: Tensor, out: Tensor, s: TcShape, alpha: number, accumulate: boolean, label: string, rows?: DirectRows): void {
  if (rows && (rows.source !== x || rows.mp !== plan.mp || rows.x16.shape[1] !== s.K)) {
    throw new TensorCoreError(`${label}: the f16 rows given were cast from ${rows.source.label} [${rows.source.shape}], not from ${x.label} [${x.shape}]`);
  }
  const cast = rows ?? castDirectRows(gpu, x, label);
  const { M: SM, N: SN, K: SK } = plan.config;
  gpu.dispatch({
    shader: 'matmul_tc_direct',
    variant: { enables: ['f16', 'subgroups', 'chromium_experimental_subgroup_matrix'], consts: { SM, SN, SK, SG: plan.subgroupSize, KS: plan.ks, STAGED: plan.staged, MULTI: false, THREE: false } },
    uniforms: new Uniforms().u32(s.M).u32(s.N).u32(s.K).u32(accumulate ? 1 : 0).f32(alpha).u32(plan.kPart).u32(0).u32(0),
    bindings: [cast.x16, w, out, cast.scale],
    workgroups: [s.N / plan.bn, plan.mp / plan.bm],
    label,
  });
  if (!rows) cast.release();
}

/** Whether products that share their f16 rows go to matmul_tc_direct as one dispatch (directParts): opt-in,
 *  TROUPE_TC_DIRECT_PARTS=on (or off). On an H100 (2026-12-07) it was 1.2-1.6x as a kernel for q/k/v, but in the
 *  256-sequence rollout's profile q/k/v gained 1.23x and gate/up lost (0.93x): 0.9 % of the GPU time, 0.97x in rounds
 *  (bench/RESULTS.md). */
export function directPartsEnabled(): boolean {
  return envFlag('TROUPE_TC_DIRECT_PARTS', 'on', 'off');
}

/** The plan of directParts for rows of x [M, K] against these weights ([N_i, K] f16, two or three), or why not: one
 *  matmul_tc_direct plan over their columns side by side (the split by the sum of their tiles). */
export function tensorCoreDirectPartsPlan(gpu: Gpu, M: number, K: number, weights: readonly Pick<Tensor, 'dtype' | 'shape' | 'label'>[], staged = directStagedDefault()): TcDirectPlan | string {
  if (weights.length !== 2 && weights.length !== 3) return `direct tensor cores take two or three weights in one dispatch, not ${weights.length}`;
  for (const w of weights) {
    if (w.dtype !== 'f16' || w.shape.length !== 2 || w.shape[1] !== K) return `${w.label} ${w.dtype} [${w.shape}] is not an f16 weight [N, ${K}]`;
  }
  const N = weights.reduce((sum, w) => sum + w.shape[0]!, 0);
  const plan = tensorCoreDirectPlan(gpu, { M, N, K, transA: false, transB: true }, 'f32', 'f16', undefined, staged);
  if (typeof plan === 'string') return plan;
  const odd = weights.find((w) => w.shape[0]! % plan.bn !== 0);
  return odd ? `${odd.label} has ${odd.shape[0]} columns, not a multiple of ${plan.bn}` : plan;
}

/** out_i [M, N_i] = x·W_iᵀ for two or three f16 weights (q, k, v; gate, up) in one matmul_tc_direct dispatch, from x's
 *  f16 rows cast once (castDirectRows / castNormedRows): the numbers of matmul() on tc_direct with the same split, one
 *  product after another. */
export function directParts(gpu: Gpu, rows: DirectRows, weights: readonly Tensor[], labels: readonly string[], staged = directStagedDefault()): Tensor[] {
  const name = `matmul_tc_direct(${labels.join(',')})`;
  const [M, K] = rows.source.shape as [number, number];
  if (labels.length !== weights.length) throw new TensorCoreError(`${name}: ${labels.length} labels for ${weights.length} weights`);
  const plan = tensorCoreDirectPartsPlan(gpu, M, K, weights, staged);
  if (typeof plan === 'string') throw new TensorCoreError(`${name}: cannot run ${M} rows of ${rows.source.label} here: ${plan}`);
  if (rows.mp !== plan.mp || rows.x16.shape[1] !== K) throw new TensorCoreError(`${name}: the f16 rows of ${rows.source.label} are [${rows.x16.shape}], not [${plan.mp}, ${K}]`);
  const N = weights.map((w) => w.shape[0]!);
  const outs = weights.map((w, i) => gpu.tensor([M, N[i]!], 'f32', `${labels[i]}.out`));
  const { M: SM, N: SN, K: SK } = plan.config;
  gpu.dispatch({
    shader: 'matmul_tc_direct',
    variant: {
      enables: ['f16', 'subgroups', 'chromium_experimental_subgroup_matrix'],
      consts: { SM, SN, SK, SG: plan.subgroupSize, KS: plan.ks, STAGED: plan.staged, MULTI: true, THREE: weights.length === 3 },
    },
    uniforms: new Uniforms().u32(M).u32(N[0]!).u32(K).u32(0).f32(1).u32(plan.kPart).u32(N[1]!).u32(N[2] ?? 0),
    bindings: [rows.x16, weights[0]!, outs[0]!, rows.scale, weights[1]!, outs[1]!, weights[2] ?? null, outs[2] ?? null],
    workgroups: [N.reduce((sum, n) => sum + n / plan.bn, 0), plan.mp / plan.bm],
    label: name,
  });
  return outs;
}

/** A single 1.0: the scale of an operand that needs none. */
const ones = new WeakMap<Gpu, Tensor>();
function one(gpu: Gpu): BufferSlice {
  let t = ones.get(gpu);
  if (!t) {
    t = gpu.upload(new Float32Array([1]), [1], 'f32', 'matmul_tc.one');
    ones.set(gpu, t);
  }
  return { buffer: t.buffer, offset: 0, size: 4 };
}

/**
 * Power-of-two scales of the R rows of a matrix seen as [R, L]: `strided` when row i is column i of the
 * stored [L, R] matrix (shaders/absmax_scale.wgsl).
 */
export function absmaxScales(gpu: Gpu, x: Tensor, R: number, L: number, strided: boolean, label = 'absmax_scale'): Tensor {
  if (x.dtype !== 'f32') throw new ShapeError(`${label}: ${x.label} is ${x.dtype}, expected f32`);
  if (x.size !== R * L) throw new ShapeError(`${label}: ${x.label} has ${x.size} elements, expected ${R} x ${L}`);
  const out = gpu.tensor([R], 'f32', `${label}.out`);
  gpu.dispatch({
    shader: 'absmax_scale',
    entry: strided ? 'cols' : 'rows',
    uniforms: u32s(R, L, 0, 0),
    bindings: [x, out],
    workgroups: grid1d(strided ? ceilDiv(R, 64) : R),
    label,
  });
  return out;
}

/** The largest f16 copy of a the tiled kernel makes: the linears' inputs at 8192 rows fit (K 3072: 48 MiB), a logits
 * gradient does not (2048 x 151936: 594 MiB, measured +0.7 GiB of peak memory in a training step for no speed). */
export const TILED_CAST_MAX_BYTES = 64 * 2 ** 20;

/** Whether the tiled kernel takes a as f16 rows cast once (castDirectRows) rather than f32 scaled in its fill: an
 * f32 a [M, K] with even K whose f16 copy fits TILED_CAST_MAX_BYTES. Each workgroup column re-reads its rows of a,
 * so half the bytes pays for the cast as soon as a product has two columns of tiles. */
export function tiledCastsA(s: Pick<TcShape, 'M' | 'K' | 'transA'>, da: DType): boolean {
  return !s.transA && da === 'f32' && s.K % 2 === 0 && s.M * s.K * 2 <= TILED_CAST_MAX_BYTES;
}

/** out = alpha·op(a)·op(b) (+ out) on tensor cores; shapes already checked by matmul(). `rows`: a already cast
 * (castDirectRows of this a, where tiledCastsA), else it is cast here. */
export function dispatchTensorCore(gpu: Gpu, plan: TcPlan, a: Tensor, b: Tensor, out: Tensor, s: TcShape, alpha: number, accumulate: boolean, label: string, rows?: DirectRows): void {
  const casts = tiledCastsA(s, a.dtype);
  if (rows && (!casts || rows.source !== a || rows.x16.shape[1] !== s.K)) {
    throw new TensorCoreError(`${label}: the f16 rows given were cast from ${rows.source.label} [${rows.source.shape}], not from ${a.label} [${a.shape}] as this product takes it`);
  }
  const cast = casts ? (rows ?? castDirectRows(gpu, a, label)) : null;
  const t: TcTile = TC_TILES[plan.tile];
  const { M: SM, N: SN, K: SK } = plan.config;
  const A = cast ? cast.x16 : a;
  const sa = cast || a.dtype === 'f16' ? null : absmaxScales(gpu, a, s.M, s.K, s.transA, `${label}.scale_a`);
  const sb = b.dtype === 'f32' ? absmaxScales(gpu, b, s.N, s.K, !s.transB, `${label}.scale_b`) : null;
  // vec4 loads where the stored-contiguous dimension allows
  const VA = (s.transA ? s.M : s.K) % 4 === 0 ? 4 : 1;
  const VB = (s.transB ? s.K : s.N) % 4 === 0 ? 4 : 1;
  gpu.dispatch({
    shader: 'matmul_tc_tiled',
    variant: {
      enables: ['f16', 'subgroups', 'chromium_experimental_subgroup_matrix'],
      aliases: { TA: A.dtype, TB: b.dtype, AV: VA === 4 ? `vec4<${A.dtype}>` : A.dtype, BV: VB === 4 ? `vec4<${b.dtype}>` : b.dtype },
      consts: {
        SM, SN, SK, WGM: t.wgm, WGN: t.wgn, SG: plan.subgroupSize, KT: t.kt, STAGES: t.stages, TRANS_A: s.transA, TRANS_B: s.transB, VA, VB,
        FILL_SCALE_A: sa !== null, FILL_SCALE_B: sb !== null,
      },
    },
    uniforms: new Uniforms().u32(s.M).u32(s.N).u32(s.K).u32(accumulate ? 1 : 0).f32(alpha).u32(0).u32(0).u32(0),
    bindings: [A, b, out, cast ? cast.scale : (sa ?? one(gpu)), sb ?? one(gpu)],
    workgroups: [ceilDiv(s.N, plan.bn), ceilDiv(s.M, plan.bm)],
    label,
  });
  sa?.release();
  sb?.release();
  if (cast && !rows) cast.release();
}

export class TensorCoreError extends Error {
  override name = 'TensorCoreError';
}
