// Attention benchmark at Qwen3-0.6B shapes (16 heads, 8 kv heads, head dim 128): packed causal prefill
// forward and backward (8 sequences of 1024), paged decode (256 sequences, and 1, × 1024 cached tokens, one new
// token each) and a paged prefill chunk, with the f16 cache when the device has shader-f16. Values are
// GFLOP/s of the nominal causal work (forward 4·hd FLOPs per (query, visible key, head); backward 2.5×
// that, as FlashAttention counts it), or GB/s of K/V cache read (decode) / written (kv_write). Timing:
// one warm-up round, then the median of 5 repeats of 10 calls, wall clock around gpu.sync().
// bench/torch/bench_attention.py times the same names and shapes in PyTorch (sdpa).
import type { Gpu } from '../src/gpu/gpu.ts';
import type { Tensor } from '../src/gpu/tensor.ts';
import { type AttentionBackwardVersion, type AttentionDims, attentionBackward, attentionPaged, attentionPrefill, attentionTcUnavailable, backwardVersion, quadKernelsUnavailable, pagedKernel, type PrefillKernel, prefillKernel, prefillRows } from '../src/kernels/attention.ts';
import { KvCache, type PagedBatch, releaseBatch } from '../src/model/kv-cache.ts';
import { mulberry32 } from '../src/util/mulberry32.ts';
import { benchRow, type BenchRow } from './results.ts';
import { medianSecondsPerCall } from './timing.ts';

const REPEATS = 5;
const CALLS = 10;

interface Shape {
  dims: AttentionDims;
  seqs: number;
  len: number;
  /** decode: sequences and cached tokens per sequence */
  decodeSeqs: number;
  decodeLen: number;
}

const FULL: Shape = { dims: { nHeads: 16, nKv: 8, headDim: 128 }, seqs: 8, len: 1024, decodeSeqs: 256, decodeLen: 1024 };
const QUICK: Shape = { dims: { nHeads: 4, nKv: 2, headDim: 32 }, seqs: 2, len: 32, decodeSeqs: 4, decodeLen: 40 };

/** Seeded uniform values in [-1, 1). */
function random(n: number, seed: number): Float32Array {
  const next = mulberry32(seed);
  return Float32Array.from({ length: n }, () => 2 * next() - 1);
}

/** Seconds per call of run, whose output tensors are released as it returns them. */
function secondsPerCall(gpu: Gpu, run: () => Tensor[]): Promise<number> {
  return medianSecondsPerCall(gpu, () => run().forEach((t) => t.release()), { calls: CALLS, repeats: REPEATS });
}

/** Fills a cache with `lens[i] − fresh` random tokens per sequence and builds the batch adding `fresh` each. */
function pagedSetup(gpu: Gpu, dims: AttentionDims, lens: number[], fresh: number) {
  const pageSize = 16;
  const pages = lens.reduce((a, l) => a + Math.ceil(l / pageSize), 0);
  const cache = new KvCache(gpu, { layers: 1, nKv: dims.nKv, headDim: dims.headDim, pageSize, numPages: pages, dtype: 'f16' });
  const seqPages = lens.map((l) => cache.allocate(Math.ceil(l / pageSize)));
  // Fill in chunks of sequences (the full decode cache is 2 × 268M values: too much for one upload).
  const row = dims.nKv * dims.headDim;
  for (let first = 0; first < lens.length; ) {
    let last = first;
    let tokens = 0;
    while (last < lens.length && (last === first || tokens + lens[last]! <= 65536)) tokens += lens[last++]!;
    const all = cache.buildBatch(seqPages.slice(first, last).map((p, i) => ({ pages: p, cachedLen: 0, newTokens: lens[first + i]! })));
    const k = gpu.upload(random(tokens * row, 3 + first), [tokens, dims.nKv, dims.headDim], 'f32', 'bench.k');
    const v = gpu.upload(random(tokens * row, 4 + first), [tokens, dims.nKv, dims.headDim], 'f32', 'bench.v');
    cache.write(0, k, v, all.slots);
    k.release();
    v.release();
    releaseBatch(all);
    first = last;
  }
  const batch: PagedBatch = cache.buildBatch(seqPages.map((p, i) => ({ pages: p, cachedLen: lens[i]! - fresh, newTokens: fresh })));
  const Tq = lens.length * fresh;
  const q = gpu.upload(random(Tq * dims.nHeads * dims.headDim, 5), [Tq, dims.nHeads, dims.headDim], 'f32', 'bench.q');
  return { cache, batch, q, free: () => (releaseBatch(batch), q.release(), cache.destroy()) };
}

export async function benchAttention(gpu: Gpu, opts: { quick: boolean; filter?: string }): Promise<BenchRow[]> {
  const sh = opts.quick ? QUICK : FULL;
  const { dims } = sh;
  const H = dims.nHeads;
  const D = dims.headDim;
  const tag = `h${H}kv${dims.nKv}d${D}`;
  const rows: BenchRow[] = [];
  const want = (name: string) => !opts.filter || name.includes(opts.filter);
  const causalPairs = (len: number) => (len * (len + 1)) / 2;

  const prefillName = `attention_prefill_f32_${sh.seqs}x${sh.len}_${tag}`;
  const backwardName = `attention_backward_f32_${sh.seqs}x${sh.len}_${tag}`;
  if (want(prefillName) || want(backwardName)) {
    const T = sh.seqs * sh.len;
    const q = gpu.upload(random(T * H * D, 1), [T, H, D], 'f32', 'bench.q');
    const k = gpu.upload(random(T * dims.nKv * D, 2), [T, dims.nKv, D], 'f32', 'bench.k');
    const v = gpu.upload(random(T * dims.nKv * D, 3), [T, dims.nKv, D], 'f32', 'bench.v');
    const dO = gpu.upload(random(T * H * D, 4), [T, H, D], 'f32', 'bench.dO');
    const seq = gpu.upload(Array.from({ length: sh.seqs + 1 }, (_, i) => i * sh.len), [sh.seqs + 1], 'u32', 'bench.seqStarts');
    const flops = 4 * D * H * sh.seqs * causalPairs(sh.len);
    const { o, lse } = attentionPrefill(gpu, q, k, v, seq, sh.seqs, dims);
    if (want(prefillName)) {
      // The default kernel under the shared name; version 1's variants beside it (_v1 with 8 or 4 rows a thread
      // as prefillRows picks, _rows4 as well when that is 8), and version 3 (_v3, tensor cores) where it can run.
      const v1: PrefillKernel[] = prefillRows(gpu, D) === 8 ? [8, 4] : [4];
      const first = prefillKernel(gpu, D);
      const others: PrefillKernel[] = [...(quadKernelsUnavailable(gpu, D) ? [] : ['quad' as const]), ...v1, ...(attentionTcUnavailable(gpu, D) ? [] : ['tc' as const])];
      const kernels = [...new Set([first, ...others])];
      for (const kern of kernels) {
        const s = await secondsPerCall(gpu, () => {
          attentionPrefill(gpu, q, k, v, seq, sh.seqs, dims, { o, lse }, kern);
          return [];
        });
        const suffix = kern === kernels[0] ? '' : kern === 'tc' ? '_v3' : kern === 'quad' ? '_v2' : kern === v1[0] ? '_v1' : `_rows${kern}`;
        rows.push(benchRow(gpu, `${prefillName}${suffix}`, flops / s / 1e9, 'GFLOP/s'));
      }
    }
    if (want(backwardName)) {
      // The default version under the shared name; version 1 beside it when the default is 2, version 3 (tensor
      // cores) where it can run.
      const versions: AttentionBackwardVersion[] = [backwardVersion(gpu, D)];
      if (versions[0] === 2) versions.push(1);
      if (versions[0] !== 3 && !attentionTcUnavailable(gpu, D, 'backward')) versions.push(3);
      for (const ver of versions) {
        const s = await secondsPerCall(gpu, () => Object.values(attentionBackward(gpu, q, k, v, o, lse, dO, seq, sh.seqs, dims, ver)));
        rows.push(benchRow(gpu, ver === versions[0] ? backwardName : `${backwardName}_v${ver}`, (2.5 * flops) / s / 1e9, 'GFLOP/s'));
      }
    }
    for (const t of [q, k, v, dO, seq, o, lse]) t.release();
    gpu.pool.trim();
  }

  const cacheTag = gpu.f16 ? 'f16cache' : 'f32cache';
  // Decode at the rollout batch, and one sequence (the batch-1 decode loop: few workgroups, keys split).
  for (const seqs of [sh.decodeSeqs, 1]) {
    const decodeName = `attention_decode_${cacheTag}_${seqs}x${sh.decodeLen}_${tag}`;
    if (!want(decodeName)) continue;
    const p = pagedSetup(gpu, dims, Array(seqs).fill(sh.decodeLen), 1);
    const kvBytes = 2 * seqs * sh.decodeLen * dims.nKv * D * (p.cache.dtype === 'f16' ? 2 : 4);
    // The default kernel (version 2) under the plain names; version 3 beside it where it can run.
    const one = { numSeqs: seqs, maxQueries: 1 };
    const kernels: ('decode3' | 'decode2')[] = pagedKernel(gpu, dims, p.cache.dtype, seqs, one, 'decode3') === 'decode3' ? ['decode2', 'decode3'] : ['decode2'];
    // The versions take turns (3 timings each, the median kept), so that both see the same clocks.
    const timings = kernels.map((): number[] => []);
    for (let turn = 0; turn < 3; turn++) {
      for (const [i, k] of kernels.entries()) timings[i]!.push(await secondsPerCall(gpu, () => [attentionPaged(gpu, p.q, p.cache, 0, p.batch, dims, k)]));
    }
    for (const [i, k] of kernels.entries()) {
      const s = timings[i]!.sort((a, b) => a - b)[1]!;
      const suffix = k === kernels[0] ? '' : '_v3';
      rows.push(benchRow(gpu, `${decodeName}${suffix}`, (4 * D * H * seqs * sh.decodeLen) / s / 1e9, 'GFLOP/s'));
      rows.push(benchRow(gpu, `${decodeName}${suffix}_kvread`, kvBytes / s / 1e9, 'GB/s'));
    }
    p.free();
    gpu.pool.trim();
  }

  const chunkName = `attention_paged_prefill_${cacheTag}_${sh.seqs}x${sh.len}_${tag}`;
  if (want(chunkName)) {
    const p = pagedSetup(gpu, dims, Array(sh.seqs).fill(sh.len), sh.len);
    const s = await secondsPerCall(gpu, () => [attentionPaged(gpu, p.q, p.cache, 0, p.batch, dims)]);
    rows.push(benchRow(gpu, chunkName, (4 * D * H * sh.seqs * causalPairs(sh.len)) / s / 1e9, 'GFLOP/s'));
    p.free();
    gpu.pool.trim();
  }

  const writeName = `kv_write_${cacheTag}_${sh.decodeSeqs}x${dims.nKv}x${D}`;
  if (want(writeName)) {
    const p = pagedSetup(gpu, dims, Array(sh.decodeSeqs).fill(sh.decodeLen), 1);
    const n = sh.decodeSeqs * dims.nKv * D;
    const k = gpu.upload(random(n, 8), [sh.decodeSeqs, dims.nKv, D], 'f32', 'bench.newK');
    const s = await secondsPerCall(gpu, () => {
      p.cache.write(0, k, k, p.batch.slots);
      return [];
    });
    const bytes = 2 * n * (4 + (p.cache.dtype === 'f16' ? 2 : 4)) + sh.decodeSeqs * 4;
    rows.push(benchRow(gpu, writeName, bytes / s / 1e9, 'GB/s'));
    k.release();
    p.free();
    gpu.pool.trim();
  }
  return rows;
}
