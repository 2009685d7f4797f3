// The paged KV cache for inference: per layer one K and one V buffer [numPages, pageSize, nKv, headDim]
// (f16 storage when the device has shader-f16 and f16 is asked for, else f32), a CPU-side page allocator
// with reference counts (so sequences can share prefix pages), and the per-step tables the attention
// kernel reads (PagedBatch).
import { GpuLimitError } from '../gpu/errors.ts';
import type { Gpu } from '../gpu/gpu.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { u32s } from '../gpu/uniforms.ts';
import { expectDtype, expectSize, ShapeError } from '../kernels/check.ts';
import { ceilDiv, grid1d } from '../kernels/grid.ts';

export class KvCacheError extends Error {
  override name = 'KvCacheError';
}

/** Tables for one attention step over the cache; built by KvCache.buildBatch. */
export interface PagedBatch {
  numSeqs: number;
  /** u32 [S+1]: offsets of each sequence's new tokens (queries) in q. */
  qStarts: Tensor;
  /** u32 [Tq]: position of each query in its sequence. */
  qPositions: Tensor;
  /** u32 [S]: tokens in cache per sequence, including the new ones. */
  seqLens: Tensor;
  /** u32 [S, maxPages]: the pages of each sequence, in order (unused entries 0). */
  pageTable: Tensor;
  maxPages: number;
  /** u32 [Tq]: cache slot (page·pageSize + offset) where each new token's K/V goes. */
  slots: Tensor;
  maxSeqLen: number;
  /** Most new tokens in one sequence (sizes the kernel grid); q.shape[0] when absent. */
  maxQueries?: number;
}

/** Returns a batch's table tensors to the pool. */
export function releaseBatch(b: PagedBatch): void {
  for (const t of [b.qStarts, b.qPositions, b.seqLens, b.pageTable, b.slots]) t.release();
}

export interface KvCacheOptions {
  layers: number;
  nKv: number;
  headDim: number;
  /** Tokens per page (16). */
  pageSize?: number;
  numPages: number;
  /** Storage precision ('f16', used only when the device has shader-f16). */
  dtype?: 'f32' | 'f16';
}

export interface PagedSeq {
  /** The sequence's pages in order; must hold cachedLen + newTokens tokens. */
  pages: number[];
  /** Tokens already in the cache. */
  cachedLen: number;
  /** Tokens this step adds (their queries come packed in q in this order). */
  newTokens: number;
}

export class KvCache {
  readonly layers: number;
  readonly nKv: number;
  readonly headDim: number;
  readonly pageSize: number;
  readonly numPages: number;
  /** Storage dtype actually used. */
  readonly dtype: 'f32' | 'f16';
  /** Per layer: [numPages, pageSize, nKv, headDim]. */
  readonly k: Tensor[] = [];
  readonly v: Tensor[] = [];
  private readonly refs: Int32Array;
  private readonly free: number[] = [];

  constructor(
    readonly gpu: Gpu,
    opts: KvCacheOptions,
  ) {
    const { layers, nKv, headDim, numPages } = opts;
    const pageSize = opts.pageSize ?? 16;
    for (const [name, x] of Object.entries({ layers, nKv, headDim, numPages, pageSize })) {
      if (!Number.isInteger(x) || x < 1) throw new KvCacheError(`KvCache: ${name} must be a positive integer, got ${x}`);
    }
    this.layers = layers;
    this.nKv = nKv;
    this.headDim = headDim;
    this.pageSize = pageSize;
    this.numPages = numPages;
    this.dtype = (opts.dtype ?? 'f16') === 'f16' && gpu.f16 ? 'f16' : 'f32';
    const bytes = numPages * pageSize * nKv * headDim * (this.dtype === 'f16' ? 2 : 4);
    const maxBind = gpu.limits.maxStorageBufferBindingSize;
    if (bytes > maxBind) {
      throw new GpuLimitError(
        `KvCache: one layer's K buffer (${numPages} pages × ${pageSize} × ${nKv} × ${headDim} ${this.dtype}) is ${bytes} bytes, ` +
          `over maxStorageBufferBindingSize ${maxBind}: use fewer pages`,
      );
    }
    const shape = [numPages, pageSize, nKv, headDim];
    for (let l = 0; l < layers; l++) {
      this.k.push(gpu.tensor(shape, this.dtype, `kv_cache.k${l}`));
      this.v.push(gpu.tensor(shape, this.dtype, `kv_cache.v${l}`));
    }
    this.refs = new Int32Array(numPages);
    for (let p = numPages - 1; p >= 0; p--) this.free.push(p);
  }

  /** Pages that fit in `bytes` of K+V storage over all layers. Pass the gpu to resolve dtype 'f16' as the
   *  constructor does (f32 storage without shader-f16). */
  static pagesForBudget(bytes: number, opts: Omit<KvCacheOptions, 'numPages'>, gpu?: Gpu): number {
    const f16 = (opts.dtype ?? 'f16') === 'f16' && (gpu?.f16 ?? true);
    const per = opts.layers * 2 * (opts.pageSize ?? 16) * opts.nKv * opts.headDim * (f16 ? 2 : 4);
    return Math.floor(bytes / per);
  }

  get freePages(): number {
    return this.free.length;
  }

  /** n fresh pages with reference count 1. */
  allocate(n: number): number[] {
    if (n > this.free.length) throw new KvCacheError(`KvCache: asked for ${n} pages, ${this.free.length} of ${this.numPages} free`);
    const pages = this.free.splice(this.free.length - n, n).reverse();
    for (const p of pages) this.refs[p] = 1;
    return pages;
  }

  /** Adds a reference to each page (a sequence sharing another's prefix). */
  retain(pages: readonly number[]): void {
    for (const p of pages) {
      this.checkPage(p, 'retain');
      this.refs[p]!++;
    }
  }

  /** Drops a reference to each page; pages no one holds go back to the free list. */
  release(pages: readonly number[]): void {
    for (const p of pages) {
      this.checkPage(p, 'release');
      if (--this.refs[p]! === 0) this.free.push(p);
    }
  }

  private checkPage(p: number, op: string): void {
    if (!Number.isInteger(p) || p < 0 || p >= this.numPages) throw new KvCacheError(`KvCache.${op}: page ${p} out of range [0, ${this.numPages})`);
    if (this.refs[p] === 0) throw new KvCacheError(`KvCache.${op}: page ${p} is not allocated`);
  }

  /** Copies page `from` to page `to` in every layer's K and V (copy-on-write of a shared, partly filled page). */
  copyPage(from: number, to: number): void {
    this.checkPage(from, 'copyPage');
    this.checkPage(to, 'copyPage');
    const bytes = this.pageSize * this.nKv * this.headDim * (this.dtype === 'f16' ? 2 : 4);
    if (bytes % 4) throw new KvCacheError(`KvCache.copyPage: a page is ${bytes} bytes, not a multiple of 4 (WebGPU copies need that)`);
    // WebGPU copies never have the same buffer as source and destination: go through a staging page.
    const tmp = this.gpu.tensor([this.pageSize, this.nKv, this.headDim], this.dtype, 'kv_cache.page');
    for (const t of [...this.k, ...this.v]) {
      this.gpu.copy(t, tmp, bytes, from * bytes, 0);
      this.gpu.copy(tmp, t, bytes, 0, to * bytes);
    }
    tmp.release();
  }

  /** Scatters new tokens' K and V ([Tq, nKv, headDim], f32 or f16) into their cache slots (u32 [Tq]). */
  write(layer: number, k: Tensor, v: Tensor, slots: Tensor): void {
    const name = 'kv_write';
    if (!Number.isInteger(layer) || layer < 0 || layer >= this.layers) throw new KvCacheError(`${name}: layer ${layer} out of range [0, ${this.layers})`);
    expectDtype(name, slots, 'u32');
    const row = this.nKv * this.headDim;
    expectSize(name, k, slots.size * row);
    expectSize(name, v, slots.size * row);
    expectDtype(name, k, 'f32', 'f16');
    if (v.dtype !== k.dtype) throw new ShapeError(`${name}: ${v.label} is ${v.dtype}, ${k.label} is ${k.dtype}`);
    const n = slots.size * row;
    this.gpu.dispatch({
      shader: 'kv_write',
      variant: { aliases: { IT: k.dtype, CT: this.dtype } },
      uniforms: u32s(n, row, 0, 0),
      bindings: [k, v, slots, this.k[layer]!, this.v[layer]!],
      workgroups: grid1d(ceilDiv(n, 256)),
      label: name,
    });
  }

  /** Uploads the tables for one step: sequences in the order their new tokens are packed in q. */
  buildBatch(seqs: readonly PagedSeq[]): PagedBatch {
    const S = seqs.length;
    if (S === 0) throw new KvCacheError('KvCache.buildBatch: no sequences');
    const maxPages = Math.max(1, ...seqs.map((s) => s.pages.length));
    const qStarts = new Uint32Array(S + 1);
    const seqLens = new Uint32Array(S);
    const pageTable = new Uint32Array(S * maxPages);
    let maxSeqLen = 0;
    let maxQueries = 0;
    seqs.forEach((s, i) => {
      const len = s.cachedLen + s.newTokens;
      if (!Number.isInteger(s.cachedLen) || !Number.isInteger(s.newTokens) || s.cachedLen < 0 || s.newTokens < 0) {
        throw new KvCacheError(`KvCache.buildBatch: sequence ${i} has cachedLen ${s.cachedLen}, newTokens ${s.newTokens}`);
      }
      if (len > s.pages.length * this.pageSize) {
        throw new KvCacheError(`KvCache.buildBatch: sequence ${i} needs ${len} tokens but has ${s.pages.length} pages of ${this.pageSize}`);
      }
      s.pages.forEach((p, j) => {
        if (!Number.isInteger(p) || p < 0 || p >= this.numPages) throw new KvCacheError(`KvCache.buildBatch: sequence ${i} page ${p} out of range`);
        pageTable[i * maxPages + j] = p;
      });
      qStarts[i + 1] = qStarts[i]! + s.newTokens;
      seqLens[i] = len;
      maxSeqLen = Math.max(maxSeqLen, len);
      maxQueries = Math.max(maxQueries, s.newTokens);
    });
    const Tq = qStarts[S]!;
    const qPositions = new Uint32Array(Tq);
    const slots = new Uint32Array(Tq);
    seqs.forEach((s, i) => {
      for (let j = 0; j < s.newTokens; j++) {
        const pos = s.cachedLen + j;
        qPositions[qStarts[i]! + j] = pos;
        slots[qStarts[i]! + j] = s.pages[Math.floor(pos / this.pageSize)]! * this.pageSize + (pos % this.pageSize);
      }
    });
    const g = this.gpu;
    return {
      numSeqs: S,
      qStarts: g.upload(qStarts, [S + 1], 'u32', 'paged.qStarts'),
      qPositions: g.upload(qPositions, [Tq], 'u32', 'paged.qPositions'),
      seqLens: g.upload(seqLens, [S], 'u32', 'paged.seqLens'),
      pageTable: g.upload(pageTable, [S, maxPages], 'u32', 'paged.pageTable'),
      maxPages,
      slots: g.upload(slots, [Tq], 'u32', 'paged.slots'),
      maxSeqLen,
      maxQueries,
    };
  }

  /** Frees the GPU buffers. */
  destroy(): void {
    for (const t of [...this.k, ...this.v]) t.release();
  }
}
