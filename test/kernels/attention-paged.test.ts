import { describe, expect, it } from 'vitest';
import { roundF16 } from '../../src/gpu/dtype.ts';
import type { Gpu } from '../../src/gpu/gpu.ts';
import { type AttentionDims, attentionPaged, attentionPrefill, decodeSplits, decodeV3Lanes, pagedKernel } from '../../src/kernels/attention.ts';
import { KvCache, KvCacheError, releaseBatch } from '../../src/model/kv-cache.ts';
import { starts, uploadQkv } from '../helpers/attention.ts';
import { testGpu } from '../helpers/gpu.ts';
import { randn, relError } from '../helpers/random.ts';
import { pagedRef } from '../ref/attention.ts';

interface PagedCase {
  cached: number[];
  fresh: number[];
  dims: AttentionDims;
  dtype: 'f32' | 'f16';
}

/** Fills a cache with random K/V for each sequence (cached part, then the new part through batch.slots) and
 *  compares attentionPaged with the reference. Pages are handed out shuffled, so tables are not contiguous. */
async function checkPaged(gpu: Gpu, c: PagedCase, seed: number, prefer?: 'decode3' | 'decode2'): Promise<number> {
  const { dims } = c;
  const pageSize = 16;
  const lens = c.cached.map((x, i) => x + c.fresh[i]!);
  const need = lens.reduce((a, l) => a + Math.ceil(l / pageSize), 0);
  const cache = new KvCache(gpu, { layers: 2, nKv: dims.nKv, headDim: dims.headDim, pageSize, numPages: need + 3, dtype: c.dtype });
  const spare = cache.allocate(3);
  cache.release([spare[1]!]);
  const pages = lens.map((l) => cache.allocate(Math.ceil(l / pageSize)));
  const row = dims.nKv * dims.headDim;
  const round = cache.dtype === 'f16' ? roundF16 : (x: Float32Array) => x;
  const kv = lens.map((l, i) => ({ k: round(randn(l * row, seed + 10 * i, 1)), v: round(randn(l * row, seed + 10 * i + 5, 1)) }));
  const layer = 1;
  const writeRows = (rows: { seq: number; from: number; n: number }[], slots: ReturnType<KvCache['buildBatch']>['slots']) => {
    const n = rows.reduce((a, r) => a + r.n, 0);
    const k = new Float32Array(n * row);
    const v = new Float32Array(n * row);
    let at = 0;
    for (const r of rows) {
      k.set(kv[r.seq]!.k.subarray(r.from * row, (r.from + r.n) * row), at * row);
      v.set(kv[r.seq]!.v.subarray(r.from * row, (r.from + r.n) * row), at * row);
      at += r.n;
    }
    cache.write(layer, gpu.upload(k, [n, dims.nKv, dims.headDim], 'f32', 'newK'), gpu.upload(v, [n, dims.nKv, dims.headDim], 'f32', 'newV'), slots);
  };
  if (c.cached.some((x) => x > 0)) {
    const pre = cache.buildBatch(pages.map((p, i) => ({ pages: p, cachedLen: 0, newTokens: c.cached[i]! })));
    writeRows(c.cached.map((n, seq) => ({ seq, from: 0, n })), pre.slots);
    releaseBatch(pre);
  }
  const batch = cache.buildBatch(pages.map((p, i) => ({ pages: p, cachedLen: c.cached[i]!, newTokens: c.fresh[i]! })));
  writeRows(c.fresh.map((n, seq) => ({ seq, from: c.cached[seq]!, n })), batch.slots);
  const Tq = c.fresh.reduce((a, b) => a + b, 0);
  const q = randn(Tq * dims.nHeads * dims.headDim, seed + 99, 1);
  const o = attentionPaged(gpu, gpu.upload(q, [Tq, dims.nHeads, dims.headDim], 'f32', 'q'), cache, layer, batch, dims, prefer);
  const ref = pagedRef(q, kv.map((x, i) => ({ ...x, positions: Array.from({ length: c.fresh[i]! }, (_, j) => c.cached[i]! + j) })), dims);
  const err = relError(await gpu.readF32(o), ref);
  releaseBatch(batch);
  cache.destroy();
  return err;
}

const PAGED_CASES: Omit<PagedCase, 'dtype'>[] = [
  // decode: one new token per sequence, partial last pages
  { cached: [0, 16, 39, 5], fresh: [1, 1, 1, 1], dims: { nHeads: 4, nKv: 2, headDim: 16 } },
  // prefill chunks on top of cached prefixes
  { cached: [0, 16, 5], fresh: [7, 33, 20], dims: { nHeads: 2, nKv: 2, headDim: 24 } },
  { cached: [3, 0], fresh: [2, 18], dims: { nHeads: 6, nKv: 2, headDim: 24 } },
  { cached: [20], fresh: [1], dims: { nHeads: 2, nKv: 1, headDim: 128 } },
  // decode entry with 2 row tiles per sequence (GQA group of 4, 2 queries)
  { cached: [50, 7], fresh: [1, 2], dims: { nHeads: 8, nKv: 2, headDim: 24 } },
  // long context, few sequences: keys split across workgroups and combined (decode, then tiled entry)
  { cached: [600, 290], fresh: [1, 3], dims: { nHeads: 2, nKv: 1, headDim: 16 } },
  { cached: [300, 40], fresh: [20, 2], dims: { nHeads: 2, nKv: 2, headDim: 16 } },
  // decode version 2: Qwen3-0.6B heads with splits, no GQA, groups of 4 and 8, odd lengths, hd 8 (one load a row)
  { cached: [700, 3, 129], fresh: [1, 1, 1], dims: { nHeads: 16, nKv: 8, headDim: 128 } },
  { cached: [31, 250], fresh: [1, 1], dims: { nHeads: 3, nKv: 3, headDim: 64 } },
  { cached: [1000], fresh: [1], dims: { nHeads: 8, nKv: 2, headDim: 32 } },
  { cached: [77, 0, 300], fresh: [1, 1, 1], dims: { nHeads: 8, nKv: 1, headDim: 128 } },
  { cached: [9, 44], fresh: [1, 1], dims: { nHeads: 2, nKv: 1, headDim: 8 } },
  // 2048 (sequence, kv head) workgroups: one split, so a workgroup walks hundreds of keys; scores up to ~±300
  // (log2 domain), so a running max that missed keys would overflow
  { cached: Array.from({ length: 128 }, (_, i) => 100 + ((i * 37) % 200)), fresh: Array(128).fill(1), dims: { nHeads: 16, nKv: 16, headDim: 8, scale: 30 } },
  // hd 24: 3 f16 (6 f32) loads a row, not a power of two: the version-1 decode entry
  { cached: [40, 2], fresh: [1, 1], dims: { nHeads: 4, nKv: 2, headDim: 24 } },
];

/** A case's cached lengths for a test name (a long list as its count and range). */
const cachedName = (c: number[]) => (c.length > 8 ? `${c.length} sequences of ${Math.min(...c)}-${Math.max(...c)}` : `[${c}]`);

describe('attentionPaged', () => {
  for (const dtype of ['f32', 'f16'] as const) {
    for (const c of PAGED_CASES) {
      it(`${dtype} cached ${cachedName(c.cached)} new ${cachedName(c.fresh)} heads ${c.dims.nHeads}/${c.dims.nKv} hd ${c.dims.headDim}`, async (ctx) => {
        const gpu = await testGpu();
        if (dtype === 'f16' && !gpu.f16) return ctx.skip();
        expect(await checkPaged(gpu, { ...c, dtype }, 7 + c.dims.headDim)).toBeLessThan(dtype === 'f16' ? 1e-4 : 2e-5);
      });
    }
    // Decode steps again through version 3 (subgroups) where it runs; the cases above took version 2.
    for (const c of PAGED_CASES.filter((x) => x.fresh.every((n) => n === 1))) {
      it(`${dtype} decode version 3: cached ${cachedName(c.cached)} heads ${c.dims.nHeads}/${c.dims.nKv} hd ${c.dims.headDim}`, async (ctx) => {
        const gpu = await testGpu();
        if (dtype === 'f16' && !gpu.f16) return ctx.skip();
        const one = { numSeqs: c.fresh.length, maxQueries: 1 };
        if (pagedKernel(gpu, c.dims, dtype, c.fresh.length, one, 'decode3') !== 'decode3') return ctx.skip('version 3 does not run here (no subgroups, or loads that do not fit)');
        expect(await checkPaged(gpu, { ...c, dtype }, 7 + c.dims.headDim, 'decode3')).toBeLessThan(dtype === 'f16' ? 1e-4 : 2e-5);
      });
    }
  }

  it('decode steps take version 2 where its loads fit (version 3 when asked, with subgroups); other calls the version-1 entries', async () => {
    const gpu = await testGpu();
    const one = { numSeqs: 3, maxQueries: 1 };
    const qwen = { nHeads: 16, nKv: 8, headDim: 128 };
    const decode = 'decode2';
    expect(pagedKernel(gpu, qwen, 'f16', 3, one)).toBe(decode);
    expect(pagedKernel(gpu, qwen, 'f32', 3, one)).toBe(decode);
    expect(pagedKernel(gpu, qwen, 'f32', 3, one, 'decode3')).toBe(gpu.report.subgroups ? 'decode3' : 'decode2');
    expect(pagedKernel(gpu, { nHeads: 4, nKv: 2, headDim: 24 }, 'f32', 3, one, 'decode3')).toBe('decode');
    if (gpu.report.subgroups) expect(decodeV3Lanes(gpu, 128, 2, 'f32')).toBe(Math.min(32, gpu.report.subgroups.minSize));
    expect(pagedKernel(gpu, { nHeads: 4, nKv: 2, headDim: 24 }, 'f16', 3, one)).toBe('decode');
    expect(pagedKernel(gpu, { nHeads: 4, nKv: 2, headDim: 24 }, 'f32', 3, one)).toBe('decode');
    expect(pagedKernel(gpu, { nHeads: 4, nKv: 2, headDim: 4 }, 'f32', 3, one)).toBe(decode);
    expect(pagedKernel(gpu, qwen, 'f16', 4, { numSeqs: 3, maxQueries: 2 })).toBe('decode');
    expect(pagedKernel(gpu, qwen, 'f16', 30, { numSeqs: 3, maxQueries: 20 })).toBe('paged');
  });

  it('cache write + attentionPaged equals attentionPrefill', async () => {
    const gpu = await testGpu();
    const dims = { nHeads: 4, nKv: 2, headDim: 16 };
    const lens = [1, 7, 33, 19];
    const st = starts(lens);
    const T = st[st.length - 1]!;
    const { tq, tk, tv } = uploadQkv(gpu, T, dims, 5);
    const cache = new KvCache(gpu, { layers: 1, nKv: 2, headDim: 16, numPages: 8, dtype: 'f32' });
    const batch = cache.buildBatch(lens.map((l) => ({ pages: cache.allocate(Math.ceil(l / 16)), cachedLen: 0, newTokens: l })));
    cache.write(0, tk, tv, batch.slots);
    const paged = await gpu.readF32(attentionPaged(gpu, tq, cache, 0, batch, dims));
    const seq = gpu.upload(st, [st.length], 'u32', 'seqStarts');
    const prefill = await gpu.readF32(attentionPrefill(gpu, tq, tk, tv, seq, lens.length, dims).o);
    expect(relError(paged, prefill)).toBeLessThan(1e-6);
  });
});

describe('KvCache', () => {
  it('allocates, shares and frees pages with reference counts', async () => {
    const gpu = await testGpu();
    const cache = new KvCache(gpu, { layers: 1, nKv: 1, headDim: 8, numPages: 4 });
    const a = cache.allocate(3);
    expect(new Set(a).size).toBe(3);
    expect(cache.freePages).toBe(1);
    expect(() => cache.allocate(2)).toThrow(KvCacheError);
    cache.retain(a.slice(0, 2));
    cache.release(a);
    expect(cache.freePages).toBe(2);
    cache.release(a.slice(0, 2));
    expect(cache.freePages).toBe(4);
    expect(() => cache.release([a[0]!])).toThrow(/not allocated/);
    expect(() => cache.buildBatch([{ pages: [0], cachedLen: 10, newTokens: 7 }])).toThrow(/needs 17 tokens but has 1 pages/);
    const b = cache.allocate(2);
    const pageVals = randn(16 * 8, 5, 1);
    const src = gpu.upload(pageVals, [16, 1, 8], 'f32', 'pageK');
    const fill = cache.buildBatch([{ pages: [b[0]!], cachedLen: 0, newTokens: 16 }]);
    cache.write(0, src, src, fill.slots);
    cache.copyPage(b[0]!, b[1]!);
    const all = await gpu.readF32(cache.v[0]!);
    const elems = 16 * 8;
    expect(Array.from(all.subarray(b[1]! * elems, (b[1]! + 1) * elems))).toEqual(Array.from(cache.dtype === 'f16' ? roundF16(pageVals) : pageVals));
    releaseBatch(fill);
    cache.release(b);
    expect(KvCache.pagesForBudget(1 << 20, { layers: 2, nKv: 2, headDim: 64, dtype: 'f16' })).toBe(Math.floor((1 << 20) / (2 * 2 * 16 * 2 * 64 * 2)));
    cache.destroy();
  });

  for (const dtype of ['f32', 'f16'] as const) {
    it(`write scatters ${dtype} rows into their slots`, async (ctx) => {
      const gpu = await testGpu();
      if (dtype === 'f16' && !gpu.f16) return ctx.skip();
      const cache = new KvCache(gpu, { layers: 2, nKv: 2, headDim: 12, pageSize: 4, numPages: 5, dtype });
      const slots = [17, 2, 9, 3, 10];
      const row = 2 * 12;
      const k = roundF16(randn(slots.length * row, 21, 1));
      const v = roundF16(randn(slots.length * row, 22, 1));
      const up = (x: Float32Array, label: string) => gpu.upload(x, [slots.length, 2, 12], dtype, label);
      cache.write(1, up(k, 'k'), up(v, 'v'), gpu.upload(slots, [slots.length], 'u32', 'slots'));
      const [ck, cv] = [await gpu.readF32(cache.k[1]!), await gpu.readF32(cache.v[1]!)];
      slots.forEach((slot, i) => {
        expect(Array.from(ck.subarray(slot * row, (slot + 1) * row))).toEqual(Array.from(k.subarray(i * row, (i + 1) * row)));
        expect(Array.from(cv.subarray(slot * row, (slot + 1) * row))).toEqual(Array.from(v.subarray(i * row, (i + 1) * row)));
      });
      cache.destroy();
    });
  }
});

describe('decodeSplits', () => {
  it('splits into single 128-key tiles only where the combine pass is needed anyway', () => {
    // batch 1, Qwen3's 8 kv heads: 1024 keys go 8 ways; up to 256 keys stay whole (no combine dispatch)
    expect(decodeSplits(8, 1024)).toEqual({ splits: 8, chunk: 128 });
    expect(decodeSplits(8, 129)).toEqual({ splits: 1, chunk: 256 });
    expect(decodeSplits(8, 256)).toEqual({ splits: 1, chunk: 256 });
    expect(decodeSplits(8, 300)).toEqual({ splits: 3, chunk: 128 });
    // many sequences fill the GPU without splits
    expect(decodeSplits(2048, 1024)).toEqual({ splits: 1, chunk: 1024 });
    // every key is covered once
    for (const [w, len] of [[8, 1000], [64, 777], [16, 5000]] as const) {
      const { splits, chunk } = decodeSplits(w, len);
      expect(chunk % 128).toBe(0);
      expect(splits * chunk).toBeGreaterThanOrEqual(len);
      expect((splits - 1) * chunk).toBeLessThan(len);
    }
  });
});
