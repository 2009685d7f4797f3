// Causal attention: training/prefill forward over packed sequences (shaders/attention_prefill.wgsl;
// attention_prefill_quad.wgsl where subgroups exist; attention_prefill_tc.wgsl on tensor cores when asked), its backward (shaders/attention_backward.wgsl;
// attention_backward_quad.wgsl where subgroups exist) and inference over the paged KV cache
// (shaders/attention_paged.wgsl; decode steps attention_decode.wgsl's version 2, its version 3 when asked).
// TROUPE_ATTENTION_PREFILL (1|2|3), _BACKWARD (1|2) and TROUPE_ATTENTION_DECODE (2|3) force a version.
import type { DType } from '../gpu/dtype.ts';
import { GpuLimitError } from '../gpu/errors.ts';
import type { Gpu } from '../gpu/gpu.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { Uniforms } from '../gpu/uniforms.ts';
import type { KvCache, PagedBatch } from '../model/kv-cache.ts';
import { expectDtype, expectSize, ShapeError } from './check.ts';
import { ceilDiv, grid1d, MAX_WORKGROUPS } from './grid.ts';
import { tensorCoreUnavailable } from './matmul-tc.ts';

export interface AttentionDims {
  nHeads: number;
  nKv: number;
  headDim: number;
  /** Score scale; 1/sqrt(headDim) when absent. */
  scale?: number;
}

/** Query rows (token, head of a GQA group) per workgroup in the tiled paged kernel (prefill: 4 × rows per thread). */
const BQ = 16;
const LOG2E = Math.LOG2E;
/** Largest head dim: 4 slots of 32 lanes. */
export const MAX_HEAD_DIM = 128;

/** Keys a tile of attention_prefill_tc.wgsl (KT there). */
const TC_KEYS = 32;
/** Subgroups a workgroup of attention_prefill_tc.wgsl (NSG there): 64 flat query rows. */
const TC_SUBGROUPS = 4;
/** Subgroups a workgroup of attention_backward_tc.wgsl (NSG there): 32 keys (dkdv) or flat query rows (dq_rows). */
const TC_BACKWARD_SUBGROUPS = 2;

function checkDims(kernel: string, d: AttentionDims): { group: number; scale: number } {
  const { nHeads, nKv, headDim } = d;
  if (![nHeads, nKv, headDim].every((x) => Number.isInteger(x) && x > 0)) {
    throw new ShapeError(`${kernel}: bad dims nHeads ${nHeads}, nKv ${nKv}, headDim ${headDim}`);
  }
  if (nHeads % nKv) throw new ShapeError(`${kernel}: nHeads ${nHeads} is not a multiple of nKv ${nKv}`);
  if (headDim > MAX_HEAD_DIM) throw new ShapeError(`${kernel}: headDim ${headDim} over the supported ${MAX_HEAD_DIM}`);
  return { group: nHeads / nKv, scale: d.scale ?? 1 / Math.sqrt(headDim) };
}

/** Workgroup memory (bytes) of each entry point for a head dim, as declared in its shader. */
export function workgroupBytes(kernel: 'prefill4' | 'prefill8' | 'prefill2' | 'prefill3' | 'paged' | 'decode' | 'decode2' | 'decode3' | 'dkdv' | 'dq' | 'dkdv2' | 'dq2' | 'dkdv3' | 'dq3', headDim: number, group = 1, lanes = 1): number {
  const ns = Math.ceil(headDim / 4);
  const vec4 = 16;
  switch (kernel) {
    case 'prefill4':
    case 'prefill8': {
      // q tile, k/v tile (padded rows), scores, probs, row metadata
      const halves = kernel === 'prefill8' ? 2 : 1;
      return vec4 * (16 * halves * ns + 32 * (ns + 1) + 2 * halves * 4 * 32) + 4 * (3 * 16 * halves + 2);
    }
    case 'paged':
      return vec4 * (16 * ns + 32 * (ns + 1) + 2 * 4 * 32) + 4 * (2 * 16 + 32 + 2);
    case 'prefill3': {
      // attention_prefill_tc.wgsl with `group` subgroups: f16 K and V tiles of 32 keys (padded rows), f32 scores and
      // f16 probabilities of 16 rows a subgroup, each lane's (max, sum) with `lanes` lanes a row, the key range (a vec4u)
      const rows = 16 * group;
      return 2 * 2 * TC_KEYS * (headDim + 8) + 4 * rows * TC_KEYS + 2 * rows * (TC_KEYS + 8) + 8 * rows * lanes + 16;
    }
    case 'dkdv3':
      // attention_backward_tc.wgsl's dkdv with `group` subgroups: f16 K and V rows (32 a subgroup's worth of room), q and
      // dO' rows of a 16-row tile, f32 Sᵀ and dPᵀ and f16 Pᵀ and dS'ᵀ of each subgroup, row metadata
      return 2 * 2 * 2 * 16 * (headDim + 8) + 2 * 2 * 16 * (headDim + 8) + group * 2 * 256 * (4 + 2) + 16 * (4 + 4 + 8) + 16;
    case 'dq3':
      // its dq_rows: the same K and V room (a key tile of 32), f32 S and dP' of 16 rows x 32 keys and f16 dS' a subgroup
      return 2 * 2 * 2 * 16 * (headDim + 8) + group * (2 * 16 * TC_KEYS * 4 + 16 * (TC_KEYS + 8) * 2) + 16;
    case 'decode':
      return vec4 * (4 * Math.max(1, Math.floor(headDim / 4)) + 4 * 4 * 32 + 8) + 4 * (128 + 8 + 2);
    case 'decode2': {
      // shaders/attention_decode.wgsl (f16 cache: 8 elements a load): queries, max tree, probabilities, slots, merge
      const keyGroups = 128 / (headDim / 8);
      return vec4 * group * (headDim / 4) + 4 * (2 * group * 128 + 128 + keyGroups * headDim);
    }
    case 'dkdv':
      return vec4 * (2 * 8 * (ns + 1) + 2 * 16 * (ns + 1) + 2 * 2 * 16) + 4 * (4 * 16 + 2);
    case 'dq':
      return vec4 * (2 * 16 * ns + 16 * (ns + 1) + 4 * 16) + 4 * (5 * 16 + 2);
    case 'decode3': {
      // attention_decode.wgsl's version 3: (max, sum) per group and head, one head's outputs of every group
      const groups = 128 / lanes;
      return 8 * groups * group + 4 * groups * headDim;
    }
    case 'dkdv2':
      // q and dO tiles of 16 rows, row metadata
      return vec4 * 2 * 16 * ns + 4 * (4 * 16 + 2);
    case 'prefill2':
    case 'dq2':
      // k and v tiles of 16 keys
      return vec4 * 2 * 16 * ns + 4 * 2;
  }
}

function checkWorkgroupMemory(gpu: Gpu, label: string, kernel: Parameters<typeof workgroupBytes>[0], headDim: number): void {
  const need = workgroupBytes(kernel, headDim);
  const have = gpu.limits.maxComputeWorkgroupStorageSize;
  if (need > have) {
    throw new GpuLimitError(`${label}: head dim ${headDim} needs ${need} bytes of workgroup memory, the device allows ${have}`);
  }
}

function checkQkv(kernel: string, q: Tensor, k: Tensor, v: Tensor, d: AttentionDims): number {
  const T = q.shape[0] ?? 0;
  expectSize(kernel, q, T * d.nHeads * d.headDim);
  expectSize(kernel, k, T * d.nKv * d.headDim);
  expectSize(kernel, v, T * d.nKv * d.headDim);
  for (const t of [q, k, v]) expectDtype(kernel, t, 'f32');
  return T;
}

function checkSeqStarts(kernel: string, seqStarts: Tensor, numSeqs: number): void {
  if (!Number.isInteger(numSeqs) || numSeqs < 1) throw new ShapeError(`${kernel}: numSeqs ${numSeqs} must be >= 1`);
  expectDtype(kernel, seqStarts, 'u32');
  if (seqStarts.size < numSeqs + 1) throw new ShapeError(`${kernel}: ${seqStarts.label} has ${seqStarts.size} entries, need numSeqs + 1 = ${numSeqs + 1}`);
}

function checkGrid(kernel: string, x: number): void {
  if (x > MAX_WORKGROUPS) throw new ShapeError(`${kernel}: ${x} query tiles exceed ${MAX_WORKGROUPS} workgroups; split the batch`);
}

/** Query rows per thread of attentionPrefill's version 1: 8 where the device's workgroup memory holds that tile, else 4. */
export function prefillRows(gpu: Gpu, headDim: number): 4 | 8 {
  return workgroupBytes('prefill8', headDim) <= gpu.limits.maxComputeWorkgroupStorageSize ? 8 : 4;
}

/** attentionPrefill's kernels: version 1 (attention_prefill.wgsl, any device) with 4 or 8 query rows a thread,
 *  'quad', version 2 (attention_prefill_quad.wgsl: q and o rows in registers, a quad of threads per query row), or
 *  'tc', version 3 (attention_prefill_tc.wgsl: q·kᵀ and P·V on tensor cores, two passes over the keys). */
export type PrefillKernel = 4 | 8 | 'quad' | 'tc';

/** Why attention_prefill_tc.wgsl (or, for 'backward', attention_backward_tc.wgsl) cannot run on `gpu` for this head
 *  dim, or null when it can: it needs the tensor-core matmul's features (tensorCoreUnavailable), 16 x 16 x 16 f16
 *  fragments, a head dim of 128 and the workgroup memory of its tiles. */
export function attentionTcUnavailable(gpu: Gpu, headDim: number, pass: 'prefill' | 'backward' = 'prefill'): string | null {
  const why = tensorCoreUnavailable(gpu);
  if (why) return why;
  if (headDim !== 128) return `head dim ${headDim} (the tensor-core kernel takes 128)`;
  if (!gpu.report.subgroupMatrixConfigs.some((c) => c.componentType === 'f16' && c.resultComponentType === 'f32' && c.M === 16 && c.N === 16 && c.K === 16)) {
    return 'no 16x16x16 f16 -> f32 subgroup matrix config';
  }
  const sg = gpu.report.subgroups!.maxSize;
  if (sg < 16 || sg % 16) return `subgroups of ${sg} lanes (the kernel needs a multiple of 16)`;
  const subgroups = pass === 'prefill' ? TC_SUBGROUPS : TC_BACKWARD_SUBGROUPS;
  if (subgroups * sg > gpu.limits.maxComputeInvocationsPerWorkgroup) return `${subgroups * sg} invocations a workgroup over the limit`;
  const kernels = pass === 'prefill' ? (['prefill3'] as const) : (['dkdv3', 'dq3'] as const);
  for (const kernel of kernels) {
    const bytes = workgroupBytes(kernel, headDim, subgroups, sg / 16);
    if (bytes > gpu.limits.maxComputeWorkgroupStorageSize) return `${kernel}: ${bytes} bytes of workgroup memory (limit ${gpu.limits.maxComputeWorkgroupStorageSize})`;
  }
  return null;
}

const envCache = new Map<string, string | undefined>();

/** A TROUPE_ATTENTION_* variable forcing a kernel version: undefined when unset, else one of `allowed`; read once
 *  per name (every layer's call asks, and process.env is slow to read). */
function envVersion(name: string, allowed: readonly string[]): string | undefined {
  if (!envCache.has(name)) {
    const v = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.[name];
    if (v !== undefined && v !== '' && !allowed.includes(v)) throw new ShapeError(`${name}=${v}: expected ${allowed.join(' or ')}`);
    envCache.set(name, v || undefined);
  }
  return envCache.get(name);
}

/** The kernel attentionPrefill runs by default: version 2 wherever quads can run (quadKernelsUnavailable), else
 *  version 1 with prefillRows; TROUPE_ATTENTION_PREFILL=1|2|3 forces a version. Version 3 (tensor cores) runs only
 *  when asked: on an H100 (2026-12-06) its results were wrong (bench/RESULTS.md). */
export function prefillKernel(gpu: Gpu, headDim: number): PrefillKernel {
  const want = envVersion('TROUPE_ATTENTION_PREFILL', ['1', '2', '3']);
  if (want === '3') {
    const whyTc = attentionTcUnavailable(gpu, headDim);
    if (whyTc) throw new GpuLimitError(`attention_prefill version 3 cannot run here: ${whyTc}`);
    return 'tc';
  }
  const why = quadKernelsUnavailable(gpu, headDim);
  if (want === '2' && why) throw new GpuLimitError(`attention_prefill version 2 cannot run here: ${why}`);
  return want !== '1' && !why ? 'quad' : prefillRows(gpu, headDim);
}

/** Training / plain prefill: causal attention over packed contiguous sequences. seqStarts: u32 [S+1] cumulative
 *  offsets (seqStarts[S] = T). Returns o [T, nHeads, hd] f32 and lse [T, nHeads] f32 (log-sum-exp of the scaled
 *  scores, saved for backward). `kernel` picks the version (default: prefillKernel). */
export function attentionPrefill(
  gpu: Gpu,
  q: Tensor,
  k: Tensor,
  v: Tensor,
  seqStarts: Tensor,
  numSeqs: number,
  dims: AttentionDims,
  out: { o?: Tensor; lse?: Tensor } = {},
  kernel: PrefillKernel = prefillKernel(gpu, dims.headDim),
): { o: Tensor; lse: Tensor } {
  const name = 'attention_prefill';
  const { group, scale } = checkDims(name, dims);
  const T = checkQkv(name, q, k, v, dims);
  checkSeqStarts(name, seqStarts, numSeqs);
  const o = out.o ?? gpu.tensor([T, dims.nHeads, dims.headDim], 'f32', 'attention.o');
  const lse = out.lse ?? gpu.tensor([T, dims.nHeads], 'f32', 'attention.lse');
  expectSize(name, o, q.size);
  expectSize(name, lse, T * dims.nHeads);
  expectDtype(name, o, 'f32');
  expectDtype(name, lse, 'f32');
  const uniforms = new Uniforms().u32(T).u32(dims.nHeads).u32(dims.nKv).u32(group).u32(numSeqs).f32(scale * LOG2E).u32(0).u32(0);
  if (kernel === 'tc') {
    const why = attentionTcUnavailable(gpu, dims.headDim);
    if (why) throw new GpuLimitError(`${name} version 3 cannot run here: ${why}`);
    const tiles = ceilDiv(T * group, 16 * TC_SUBGROUPS);
    checkGrid(name, tiles);
    gpu.dispatch({
      shader: 'attention_prefill_tc',
      variant: {
        enables: ['f16', 'subgroups', 'chromium_experimental_subgroup_matrix'],
        consts: { SM: 16, SN: 16, SK: 16, SG: gpu.report.subgroups!.maxSize, HD: dims.headDim, NSG: TC_SUBGROUPS },
      },
      uniforms,
      bindings: [q, k, v, seqStarts, o, lse],
      workgroups: [tiles, dims.nKv],
      label: name,
    });
    return { o, lse };
  }
  if (kernel === 'quad') {
    const why = quadKernelsUnavailable(gpu, dims.headDim);
    if (why) throw new GpuLimitError(`${name} version 2 cannot run here: ${why}`);
    const tiles = ceilDiv(T * group, 32);
    checkGrid(name, tiles);
    checkWorkgroupMemory(gpu, name, 'prefill2', dims.headDim);
    gpu.dispatch({
      shader: 'attention_prefill_quad',
      variant: { enables: ['subgroups'], consts: { HD: dims.headDim } },
      uniforms,
      bindings: [q, k, v, seqStarts, o, lse],
      workgroups: [tiles, dims.nKv],
      label: name,
    });
    return { o, lse };
  }
  const tiles = ceilDiv(T * group, 4 * kernel);
  checkGrid(name, tiles);
  checkWorkgroupMemory(gpu, name, kernel === 8 ? 'prefill8' : 'prefill4', dims.headDim);
  gpu.dispatch({
    shader: 'attention_prefill',
    variant: { consts: { HD: dims.headDim, ROWS: kernel } },
    uniforms,
    bindings: [q, k, v, seqStarts, o, lse],
    workgroups: [tiles, dims.nKv],
    label: name,
  });
  return { o, lse };
}

/** Keys one split of a paged workgroup covers at least. */
const MIN_SPLIT_KEYS = 256;
/** Workgroups the split heuristic aims for: enough to fill a large GPU. */
const TARGET_WORKGROUPS = 2048;
/** Rows (query, head of the group) up to which the decode entry point is used, in tiles of 4. */
const DECODE_ROWS = 8;

/** How many ways to split each sequence's keys (flash-decoding): more when there are few (sequence, kv head,
 *  query tile) workgroups. chunk is the keys per split, a multiple of the kernel's key step. */
export function pagedSplits(workgroups: number, maxSeqLen: number, keyStep: number, minSplitKeys = MIN_SPLIT_KEYS): { splits: number; chunk: number } {
  const maxSplits = Math.max(1, Math.ceil(maxSeqLen / minSplitKeys));
  const want = Math.min(maxSplits, Math.max(1, Math.ceil(TARGET_WORKGROUPS / workgroups)));
  const chunk = Math.max(keyStep, Math.ceil(Math.ceil(maxSeqLen / want) / keyStep) * keyStep);
  return { splits: Math.max(1, Math.ceil(maxSeqLen / chunk)), chunk };
}

/** Splits of decode version 2 (128-key tiles): where 256-key splits already need the combine pass, splits of one
 *  tile each (at batch 1 and 1024 cached tokens 8 splits of 8 kv heads, 64 workgroups, where 256-key ones left 32
 *  workgroups walking two tiles in series); where they do not, none: a step of few sequences is bound by the host's
 *  recording (about 16 us a dispatch on the H100's host), and the combine would be one dispatch a layer more. */
export function decodeSplits(workgroups: number, maxSeqLen: number): { splits: number; chunk: number } {
  const wide = pagedSplits(workgroups, maxSeqLen, 128);
  return wide.splits > 1 ? pagedSplits(workgroups, maxSeqLen, 128, 128) : wide;
}

/** Whether a decode step (one query per sequence) can take shaders/attention_decode.wgsl: its 16-byte loads need
 *  HD a multiple of 8 (f16 cache) or 4 (f32), with a power-of-two number of loads per row, and its workgroup
 *  memory (sized by the GQA group) must fit the device. */
export function decodeV2Applies(gpu: Gpu, headDim: number, group: number, cacheDtype: 'f32' | 'f16'): boolean {
  const perLoad = cacheDtype === 'f16' ? 8 : 4;
  const loads = headDim / perLoad;
  if (!Number.isInteger(loads) || loads & (loads - 1)) return false;
  // The f32 cache has half the key groups of the f16 one: the f16 size bounds both.
  return workgroupBytes('decode2', Math.max(headDim, 8), group) <= gpu.limits.maxComputeWorkgroupStorageSize;
}

/** Lanes per key of decode version 3 (shaders/attention_decode.wgsl, `main_sg`) on this device, or null where it cannot run: it
 *  needs subgroups and version 2's loads (a power-of-two number of 16-byte loads per row), and takes as many lanes
 *  per key as there are loads in a row, at most the smallest subgroup. */
export function decodeV3Lanes(gpu: Gpu, headDim: number, group: number, cacheDtype: 'f32' | 'f16'): number | null {
  const sg = gpu.report.subgroups;
  if (!sg || !decodeV2Applies(gpu, headDim, group, cacheDtype)) return null;
  const lanes = Math.min(headDim / (cacheDtype === 'f16' ? 8 : 4), sg.minSize, 128);
  if (lanes & (lanes - 1)) return null;
  return workgroupBytes('decode3', headDim, group, lanes) <= gpu.limits.maxComputeWorkgroupStorageSize ? lanes : null;
}

/** A decode step's q/k norm, RoPE and cache write done inside attention_decode.wgsl (FUSE) instead of by
 *  qkNormRope first: q is then q_proj's rows as they come, and these the rest of what qk_norm_rope's `to_cache`
 *  reads. The rope tables must cover every position of the batch (RopeTable.ensure). */
export interface DecodeQkNormRope {
  /** k_proj's and v_proj's rows, f32 [Tq, nKv, headDim] (the sequences' new tokens). */
  k: Tensor;
  v: Tensor;
  /** q_norm's weight, then k_norm's: f32 [2, headDim]. */
  qkNorm: Tensor;
  cos: Tensor;
  sin: Tensor;
  eps: number;
}

/** Storage buffers of attention_decode.wgsl's FUSE variant. */
const DECODE_FUSED_STORAGE_BUFFERS = 12;

/** Whether attentionPaged can take a DecodeQkNormRope for Tq queries of this batch: a version-2 decode step of
 *  f32 queries, on a device that binds 12 storage buffers a stage and has room for the normed rows. */
export function decodeFusesQkNormRope(gpu: Gpu, dims: AttentionDims, cacheDtype: 'f32' | 'f16', Tq: number, batch: Pick<PagedBatch, 'numSeqs' | 'maxQueries'>, qDtype: DType = 'f32'): boolean {
  return qDtype === 'f32' && fusedDecodeFits(gpu, dims) && pagedKernel(gpu, dims, cacheDtype, Tq, batch) === 'decode2';
}

/** Whether the device binds the FUSE variant's buffers and has room for its normed rows. */
function fusedDecodeFits(gpu: Gpu, dims: AttentionDims): boolean {
  if (gpu.limits.maxStorageBuffersPerShaderStage < DECODE_FUSED_STORAGE_BUFFERS) return false;
  const group = dims.nHeads / dims.nKv;
  return workgroupBytes('decode2', Math.max(dims.headDim, 8), group) + 4 * (group + 1) * dims.headDim <= gpu.limits.maxComputeWorkgroupStorageSize;
}

/** The kernels of attentionPaged: decode versions 3 (subgroups) and 2 (one query per sequence), the version-1
 *  decode entry (few rows per sequence) and the tiled one. */
export type PagedKernel = 'decode3' | 'decode2' | 'decode' | 'paged';

/** Which kernel attentionPaged runs for Tq queries of a batch (see there); `prefer` (else TROUPE_ATTENTION_DECODE)
 *  'decode3' asks for version 3 where it can run. */
export function pagedKernel(
  gpu: Gpu,
  dims: AttentionDims,
  cacheDtype: 'f32' | 'f16',
  Tq: number,
  batch: Pick<PagedBatch, 'numSeqs' | 'maxQueries'>,
  prefer?: 'decode3' | 'decode2',
): PagedKernel {
  const group = dims.nHeads / dims.nKv;
  const maxQueries = batch.maxQueries ?? Tq;
  if (Tq === batch.numSeqs && maxQueries === 1) {
    // Version 2 by default: on the H200 version 3 ran 0.71x its KV read rate at 256 x 1024 and 0.87x at
    // 1 x 1024, and a 256-sequence decode step 0.81x (bench attention/model, 2026-12-02 17:00 UTC).
    if (prefer === 'decode3' || (prefer === undefined && envVersion('TROUPE_ATTENTION_DECODE', ['2', '3']) === '3')) {
      if (decodeV3Lanes(gpu, dims.headDim, group, cacheDtype) !== null) return 'decode3';
      if (prefer === undefined) {
        throw new GpuLimitError(`TROUPE_ATTENTION_DECODE=3: decode version 3 cannot run here (it needs subgroups and a power-of-two number of 16-byte loads per row; head dim ${dims.headDim}, ${cacheDtype} cache)`);
      }
    }
    if (decodeV2Applies(gpu, dims.headDim, group, cacheDtype)) return 'decode2';
  }
  return dims.headDim % 4 === 0 && maxQueries * group <= DECODE_ROWS ? 'decode' : 'paged';
}

/** Inference over the paged KV cache: queries of new tokens (any number per sequence: prefill chunks, prefix-cached
 *  prompts, or 1 per sequence for decode) attend causally to all cached positions of their sequence up to their own
 *  position. The cache already holds these tokens' K/V (write them first). Returns o [Tq, nHeads, hd] f32.
 *  A decode step takes attention_decode.wgsl's version 2 where it applies (decodeV2Applies), or version 3 when
 *  `prefer` (or TROUPE_ATTENTION_DECODE=3) asks and subgroups exist (decodeV3Lanes); other calls with few rows per
 *  sequence the `decode` entry point of attention_paged.wgsl, and the rest its tiled `main`. */
export function attentionPaged(gpu: Gpu, q: Tensor, cache: KvCache, layer: number, batch: PagedBatch, dims: AttentionDims, prefer?: 'decode3' | 'decode2', qkNormRope?: DecodeQkNormRope): Tensor {
  const name = 'attention_paged';
  const { group, scale } = checkDims(name, dims);
  if (dims.nKv !== cache.nKv || dims.headDim !== cache.headDim) {
    throw new ShapeError(`${name}: dims nKv ${dims.nKv}, headDim ${dims.headDim} do not match the cache's ${cache.nKv}, ${cache.headDim}`);
  }
  if (!Number.isInteger(layer) || layer < 0 || layer >= cache.layers) throw new ShapeError(`${name}: layer ${layer} out of range [0, ${cache.layers})`);
  const Tq = q.shape[0] ?? 0;
  expectSize(name, q, Tq * dims.nHeads * dims.headDim);
  expectDtype(name, q, 'f32');
  expectSize(name, batch.qStarts, batch.numSeqs + 1);
  expectSize(name, batch.qPositions, Tq);
  expectSize(name, batch.pageTable, batch.numSeqs * batch.maxPages);
  const o = gpu.tensor([Tq, dims.nHeads, dims.headDim], 'f32', 'attention_paged.o');
  if (Tq === 0) return o;
  if (batch.numSeqs > MAX_WORKGROUPS) throw new ShapeError(`${name}: ${batch.numSeqs} sequences exceed ${MAX_WORKGROUPS}`);
  const seqRows = (batch.maxQueries ?? Tq) * group;
  const kernel = pagedKernel(gpu, dims, cache.dtype, Tq, batch, prefer);
  if (qkNormRope) checkDecodeQkNormRope(gpu, qkNormRope, dims, kernel, Tq, batch);
  const oneTile = kernel === 'decode3' || kernel === 'decode2';
  const qTiles = oneTile ? 1 : ceilDiv(seqRows, kernel === 'decode' ? 4 : BQ);
  // Version 3's groups walk their keys in series (U = 4 at a time): few sequences get splits down to one pass.
  const lanes = kernel === 'decode3' ? decodeV3Lanes(gpu, dims.headDim, group, cache.dtype)! : 0;
  const v3Step = (128 / lanes) * 4;
  const { splits, chunk } =
    kernel === 'decode3'
      ? pagedSplits(batch.numSeqs * dims.nKv, batch.maxSeqLen, v3Step, v3Step)
      : kernel === 'decode2'
        ? decodeSplits(batch.numSeqs * dims.nKv, batch.maxSeqLen)
        : pagedSplits(batch.numSeqs * dims.nKv * qTiles, batch.maxSeqLen, kernel === 'paged' ? 32 : 128);
  checkGrid(name, qTiles * splits);
  if (!oneTile) checkWorkgroupMemory(gpu, name, kernel as 'decode' | 'paged', dims.headDim);
  const rows = Tq * dims.nHeads;
  const parts = splits > 1 ? gpu.tensor([splits, rows, dims.headDim], 'f32', 'attention_paged.parts') : o;
  const ml = gpu.tensor([splits > 1 ? splits * rows * 2 : 2], 'f32', 'attention_paged.ml');
  const variant = { consts: { HD: dims.headDim }, aliases: { CT: cache.dtype } };
  const uniforms = new Uniforms()
    .u32(Tq).u32(dims.nHeads).u32(dims.nKv).u32(group).u32(cache.pageSize).u32(batch.maxPages).u32(splits).u32(chunk)
    .f32(scale * LOG2E).f32(qkNormRope?.eps ?? 0).u32(0).u32(0);
  const kc = cache.k[layer]!;
  const vc = cache.v[layer]!;
  const tables = [batch.qStarts, batch.qPositions, batch.pageTable, parts, ml];
  if (kernel === 'decode3') {
    gpu.dispatch({
      shader: 'attention_decode',
      entry: 'main_sg',
      variant: { enables: ['subgroups'], consts: { HD: dims.headDim, G: group, F16: cache.dtype === 'f16', SG: true, L: lanes, FUSE: false } },
      uniforms,
      bindings: [q, kc, vc, ...tables],
      workgroups: [splits, dims.nKv, batch.numSeqs],
      label: 'attention_decode.sg',
    });
  } else if (kernel === 'decode2') {
    const fuse = qkNormRope !== undefined;
    gpu.dispatch({
      shader: 'attention_decode',
      variant: { consts: { HD: dims.headDim, G: group, F16: cache.dtype === 'f16', SG: false, FUSE: fuse } },
      uniforms,
      bindings: fuse
        ? [q, kc, vc, null, ...tables.slice(1), qkNormRope.k, qkNormRope.v, qkNormRope.qkNorm, qkNormRope.cos, qkNormRope.sin]
        : [q, kc, vc, ...tables],
      workgroups: [splits, dims.nKv, batch.numSeqs],
      label: fuse ? 'attention_decode(qk_norm_rope)' : 'attention_decode',
    });
  } else {
    gpu.dispatch({
      shader: 'attention_paged',
      entry: kernel === 'decode' ? 'decode' : 'main',
      variant,
      uniforms,
      bindings: kernel === 'decode' ? [q, null, null, ...tables, null, kc, vc] : [q, kc, vc, ...tables],
      workgroups: [qTiles * splits, dims.nKv, batch.numSeqs],
      label: kernel === 'decode' ? `${name}.decode` : name,
    });
  }
  if (splits > 1) {
    gpu.dispatch({
      shader: 'attention_paged',
      entry: 'combine',
      variant,
      uniforms,
      bindings: [null, null, null, null, null, null, parts, ml, o],
      workgroups: grid1d(ceilDiv(rows * dims.headDim, 256)),
      label: `${name}.combine`,
    });
    parts.release();
  }
  ml.release();
  return o;
}

function checkDecodeQkNormRope(gpu: Gpu, x: DecodeQkNormRope, dims: AttentionDims, kernel: PagedKernel, Tq: number, batch: PagedBatch): void {
  const name = 'attention_decode(qk_norm_rope)';
  if (kernel !== 'decode2' || !fusedDecodeFits(gpu, dims)) {
    throw new ShapeError(`${name}: the q/k norm and RoPE go inside version-2 decode steps only (f32 queries, one per sequence, 12 storage buffers a stage); here: ${Tq} queries of ${batch.numSeqs} sequences, ${gpu.limits.maxStorageBuffersPerShaderStage} storage buffers (decodeFusesQkNormRope)`);
  }
  for (const t of [x.k, x.v]) {
    expectDtype(name, t, 'f32');
    expectSize(name, t, Tq * dims.nKv * dims.headDim);
  }
  expectDtype(name, x.qkNorm, 'f32');
  expectSize(name, x.qkNorm, 2 * dims.headDim);
  for (const t of [x.cos, x.sin]) {
    expectDtype(name, t, 'f32');
    if (t.size % (dims.headDim / 2)) throw new ShapeError(`${name}: ${t.label} has ${t.size} elements, not whole rows of ${dims.headDim / 2}`);
  }
}

/** The attention backward kernels: 1 (attention_backward.wgsl, any device), 2 (attention_backward_quad.wgsl:
 * operands in registers, scores summed over quads; needs subgroups of at least 4 and a head dim multiple of 16) or
 * 3 (attention_backward_tc.wgsl: the products on tensor cores; attentionTcUnavailable says where it runs). */
export type AttentionBackwardVersion = 1 | 2 | 3;


/** Why the quad kernels (attention's backward and prefill version 2) cannot run on `gpu` for this head dim, or null when they can. */
export function quadKernelsUnavailable(gpu: Gpu, headDim: number): string | null {
  const sg = gpu.report.subgroups;
  if (!sg) return 'no subgroups feature';
  if (sg.minSize < 4) return `subgroups of ${sg.minSize} lanes (quads need 4)`;
  if (headDim % 16) return `head dim ${headDim} is not a multiple of 16`;
  if (gpu.limits.maxComputeInvocationsPerWorkgroup < 128) return 'fewer than 128 invocations a workgroup';
  return null;
}

/** The version attentionBackward runs: `requested` (or TROUPE_ATTENTION_BACKWARD), else 2 wherever it can run.
 *  Version 3 (tensor cores) runs only when asked: on an H100 (2026-12-06) its results were wrong (bench/RESULTS.md). */
export function backwardVersion(gpu: Gpu, headDim: number, requested?: AttentionBackwardVersion): AttentionBackwardVersion {
  const env = envVersion('TROUPE_ATTENTION_BACKWARD', ['1', '2', '3']);
  const want = requested ?? (env === undefined ? null : (Number(env) as AttentionBackwardVersion));
  if (want === 3) {
    const whyTc = attentionTcUnavailable(gpu, headDim, 'backward');
    if (whyTc) throw new GpuLimitError(`attention_backward version 3 cannot run here: ${whyTc}`);
    return 3;
  }
  const why = quadKernelsUnavailable(gpu, headDim);
  if (want === 2 && why) throw new GpuLimitError(`attention_backward version 2 cannot run here: ${why}`);
  return want ?? (why ? 1 : 2);
}

/** Backward of attentionPrefill: returns dq, dk, dv (same shapes as q, k, v). No T×T matrix in memory; deterministic.
 * `version` picks the kernels (default: backwardVersion). */
export function attentionBackward(
  gpu: Gpu,
  q: Tensor,
  k: Tensor,
  v: Tensor,
  o: Tensor,
  lse: Tensor,
  dO: Tensor,
  seqStarts: Tensor,
  numSeqs: number,
  dims: AttentionDims,
  version?: AttentionBackwardVersion,
): { dq: Tensor; dk: Tensor; dv: Tensor } {
  const name = 'attention_backward';
  const { group, scale } = checkDims(name, dims);
  const T = checkQkv(name, q, k, v, dims);
  checkSeqStarts(name, seqStarts, numSeqs);
  for (const t of [o, dO]) {
    expectSize(name, t, q.size);
    expectDtype(name, t, 'f32');
  }
  expectSize(name, lse, T * dims.nHeads);
  expectDtype(name, lse, 'f32');
  const chosen = backwardVersion(gpu, dims.headDim, version);
  // keys (dkdv) and flat query rows (dq_rows) a workgroup of each version
  const [keysPer, rowsPer] = chosen === 3 ? [16 * TC_BACKWARD_SUBGROUPS, 16 * TC_BACKWARD_SUBGROUPS] : chosen === 2 ? [32, 32] : [8, 16];
  const keyTiles = ceilDiv(T, keysPer);
  const rowTiles = ceilDiv(T * group, rowsPer);
  checkGrid(name, Math.max(keyTiles, rowTiles));
  if (chosen !== 3) {
    checkWorkgroupMemory(gpu, name, chosen === 2 ? 'dkdv2' : 'dkdv', dims.headDim);
    checkWorkgroupMemory(gpu, name, chosen === 2 ? 'dq2' : 'dq', dims.headDim);
  }
  const dq = gpu.tensor(q.shape, 'f32', 'attention.dq');
  const dk = gpu.tensor(k.shape, 'f32', 'attention.dk');
  const dv = gpu.tensor(v.shape, 'f32', 'attention.dv');
  if (T === 0) return { dq, dk, dv };
  if (chosen === 3) {
    attentionBackwardTc(gpu, { q, k, v, o, lse, dO, seqStarts, dq, dk, dv }, [keyTiles, rowTiles], numSeqs, dims, group, scale);
    return { dq, dk, dv };
  }
  const v2 = chosen === 2;
  const stats = gpu.tensor([T * dims.nHeads, 4], 'f32', 'attention.stats');
  const variant = { consts: { HD: dims.headDim } };
  const uniforms = new Uniforms().u32(T).u32(dims.nHeads).u32(dims.nKv).u32(group).u32(numSeqs).f32(scale * LOG2E).f32(scale).u32(0);
  gpu.dispatch({
    shader: 'attention_backward',
    entry: 'delta',
    variant,
    uniforms,
    bindings: [null, null, null, dO, stats, seqStarts, null, null, null, o, lse],
    workgroups: grid1d(ceilDiv(T * dims.nHeads, 64)),
    label: `${name}.delta`,
  });
  const shader = v2 ? 'attention_backward_quad' : 'attention_backward';
  const kernelVariant = v2 ? { enables: ['subgroups'], consts: { HD: dims.headDim } } : variant;
  gpu.dispatch({
    shader,
    entry: 'dkdv',
    variant: kernelVariant,
    uniforms,
    bindings: [q, k, v, dO, stats, seqStarts, dk, dv],
    workgroups: [keyTiles, dims.nKv],
    label: `${name}.dkdv`,
  });
  gpu.dispatch({
    shader,
    entry: 'dq_rows',
    variant: kernelVariant,
    uniforms,
    bindings: [q, k, v, dO, stats, null, null, null, dq],
    workgroups: [rowTiles, dims.nKv],
    label: `${name}.dq`,
  });
  stats.release();
  return { dq, dk, dv };
}

/** attentionBackward's version 3 (shaders/attention_backward_tc.wgsl) into dq, dk, dv: `delta` keeps each row's
 *  statistics and the largest |dO| of each sequence, `scales` turns that into the power of two that keeps the
 *  sequence's dO' in f16's range (attentionTcUnavailable checked the workgroup memory), then dkdv and dq_rows run
 *  their products as 16x16 subgroup matrices over [keyTiles, rowTiles] workgroups per kv head. */
function attentionBackwardTc(
  gpu: Gpu,
  t: Record<'q' | 'k' | 'v' | 'o' | 'lse' | 'dO' | 'seqStarts' | 'dq' | 'dk' | 'dv', Tensor>,
  [keyTiles, rowTiles]: [number, number],
  numSeqs: number,
  dims: AttentionDims,
  group: number,
  scale: number,
): void {
  const name = 'attention_backward';
  const T = t.q.shape[0]!;
  const stats = gpu.tensor([T * dims.nHeads, 4], 'f32', 'attention.stats');
  const seqMax = gpu.upload(new Uint32Array(numSeqs), [numSeqs], 'u32', 'attention.seqMax');
  const uniforms = new Uniforms().u32(T).u32(dims.nHeads).u32(dims.nKv).u32(group).u32(numSeqs).f32(scale * LOG2E).f32(scale).u32(0);
  const variant = {
    enables: ['f16', 'subgroups', 'chromium_experimental_subgroup_matrix'],
    consts: { SM: 16, SN: 16, SK: 16, SG: gpu.report.subgroups!.maxSize, HD: dims.headDim, NSG: TC_BACKWARD_SUBGROUPS },
  };
  const shader = 'attention_backward_tc';
  const perRow = grid1d(ceilDiv(T * dims.nHeads, 64));
  gpu.dispatch({ shader, entry: 'delta', variant, uniforms, bindings: [null, null, null, t.dO, stats, t.seqStarts, null, null, null, t.o, t.lse, seqMax], workgroups: perRow, label: `${name}.delta` });
  gpu.dispatch({ shader, entry: 'scales', variant, uniforms, bindings: [null, null, null, null, stats, null, null, null, null, null, null, seqMax], workgroups: perRow, label: `${name}.scales` });
  gpu.dispatch({ shader, entry: 'dkdv', variant, uniforms, bindings: [t.q, t.k, t.v, t.dO, stats, t.seqStarts, t.dk, t.dv], workgroups: [keyTiles, dims.nKv], label: `${name}.dkdv` });
  gpu.dispatch({ shader, entry: 'dq_rows', variant, uniforms, bindings: [t.q, t.k, t.v, t.dO, stats, null, null, null, t.dq], workgroups: [rowTiles, dims.nKv], label: `${name}.dq` });
  stats.release();
  seqMax.release();
}
