// attention_decode.wgsl's FUSE variant: a decode step's q/k norm, RoPE and cache write inside the attention pass.
// Checked against the CPU references (rmsnorm, rope, paged attention) and against the two passes it replaces
// (qk_norm_rope's to_cache, then attention_decode), outputs and caches.
import { describe, expect, it } from 'vitest';
import { roundF16 } from '../../src/gpu/dtype.ts';
import type { Gpu } from '../../src/gpu/gpu.ts';
import { type AttentionDims, attentionPaged, decodeFusesQkNormRope } from '../../src/kernels/attention.ts';
import { qkNormRope, qkNormRopeWritesCache } from '../../src/kernels/qk-norm-rope.ts';
import { KvCache, type PagedBatch, releaseBatch } from '../../src/model/kv-cache.ts';
import { RopeTable, ropeTables } from '../../src/model/rope-table.ts';
import { testGpu } from '../helpers/gpu.ts';
import { randn, relError } from '../helpers/random.ts';
import { pagedRef } from '../ref/attention.ts';
import { rmsnormRef } from '../ref/rmsnorm.ts';
import { ropeRef } from '../ref/rope.ts';

const EPS = 1e-6;
const PAGE = 16;
const THETA = 1e6;

// One new token per sequence after `cached` ones: partial pages, an empty prefix, splits (long contexts),
// no GQA, groups of 2, 4 and 8, head dims 8 (one f16 load a row) to 128.
const CASES: { cached: number[]; dims: AttentionDims }[] = [
  { cached: [0, 16, 39, 5], dims: { nHeads: 4, nKv: 2, headDim: 16 } },
  { cached: [700, 3, 129], dims: { nHeads: 16, nKv: 8, headDim: 128 } },
  { cached: [31, 250], dims: { nHeads: 3, nKv: 3, headDim: 64 } },
  { cached: [1000], dims: { nHeads: 8, nKv: 2, headDim: 32 } },
  { cached: [77, 0, 300], dims: { nHeads: 8, nKv: 1, headDim: 128 } },
  { cached: [9, 44], dims: { nHeads: 2, nKv: 1, headDim: 8 } },
];

interface Step {
  cache: KvCache;
  batch: PagedBatch;
}

/** A cache holding `cached` random K/V rows per sequence (pages handed out shuffled) and a batch of one new token each. */
function cacheWithPrefix(gpu: Gpu, cached: number[], dims: AttentionDims, dtype: 'f32' | 'f16', prefix: { k: Float32Array; v: Float32Array }[]): Step {
  const cache = new KvCache(gpu, { layers: 2, nKv: dims.nKv, headDim: dims.headDim, pageSize: PAGE, numPages: cached.reduce((a, c) => a + Math.ceil((c + 1) / PAGE), 0) + 3, dtype });
  const spare = cache.allocate(3);
  cache.release([spare[1]!]);
  const pages = cached.map((c) => cache.allocate(Math.ceil((c + 1) / PAGE)));
  const row = dims.nKv * dims.headDim;
  const total = cached.reduce((a, b) => a + b, 0);
  if (total > 0) {
    const pre = cache.buildBatch(pages.map((p, i) => ({ pages: p, cachedLen: 0, newTokens: cached[i]! })));
    const k = new Float32Array(total * row);
    const v = new Float32Array(total * row);
    let at = 0;
    for (const [i, n] of cached.entries()) {
      k.set(prefix[i]!.k.subarray(0, n * row), at * row);
      v.set(prefix[i]!.v.subarray(0, n * row), at * row);
      at += n;
    }
    cache.write(1, gpu.upload(k, [total, dims.nKv, dims.headDim], 'f32', 'prefixK'), gpu.upload(v, [total, dims.nKv, dims.headDim], 'f32', 'prefixV'), pre.slots);
    releaseBatch(pre);
  }
  return { cache, batch: cache.buildBatch(pages.map((p, i) => ({ pages: p, cachedLen: cached[i]!, newTokens: 1 }))) };
}

describe('attention_decode with the q/k norm and RoPE inside (FUSE)', () => {
  for (const dtype of ['f32', 'f16'] as const) {
    for (const { cached, dims } of CASES) {
      it(`${dtype} cache: cached [${cached}] heads ${dims.nHeads}/${dims.nKv} hd ${dims.headDim}`, async (ctx) => {
        const gpu = await testGpu();
        if (dtype === 'f16' && !gpu.f16) return ctx.skip();
        const S = cached.length;
        const one = { numSeqs: S, maxQueries: 1 };
        if (!decodeFusesQkNormRope(gpu, dims, dtype, S, one)) return ctx.skip('the device binds fewer than 12 storage buffers a stage');
        const { nHeads, nKv, headDim: hd } = dims;
        const row = nKv * hd;
        const round = dtype === 'f16' ? roundF16 : (x: Float32Array) => x;
        const seed = hd + nHeads + S;
        const prefix = cached.map((c, i) => ({ k: round(randn(c * row, seed + 10 * i, 1)), v: round(randn(c * row, seed + 10 * i + 5, 1)) }));
        const q = randn(S * nHeads * hd, seed + 1, 2);
        const k = randn(S * row, seed + 2, 0.5);
        const v = randn(S * row, seed + 3, 1);
        const qw = randn(hd, seed + 4);
        const kw = randn(hd, seed + 5);
        const maxPos = Math.max(...cached) + 1;
        const table = new RopeTable(gpu, hd, THETA, maxPos);
        const up = (x: Float32Array, shape: number[], label: string) => gpu.upload(x, shape, 'f32', label);
        const qkNorm = up(Float32Array.from([...qw, ...kw]), [2, hd], 'qk_norm');

        const fused = cacheWithPrefix(gpu, cached, dims, dtype, prefix);
        const otherLayer = await gpu.readF32(fused.cache.k[0]!);
        const o = attentionPaged(gpu, up(q, [S, nHeads, hd], 'q'), fused.cache, 1, fused.batch, dims, undefined, {
          k: up(k, [S, nKv, hd], 'k'),
          v: up(v, [S, nKv, hd], 'v'),
          qkNorm,
          cos: table.cos,
          sin: table.sin,
          eps: EPS,
        });

        // CPU: norm, rope, the new rows appended (as the cache stores them), attention.
        const { cos, sin } = ropeTables(hd, THETA, maxPos);
        const qRef = Float32Array.from(ropeRef(rmsnormRef(q, qw, EPS).y, nHeads, hd, cached, cos, sin));
        const kNew = round(Float32Array.from(ropeRef(Float32Array.from(rmsnormRef(k, kw, EPS).y), nKv, hd, cached, cos, sin)));
        const vNew = round(Float32Array.from(v));
        const seqs = cached.map((c, i) => {
          const kk = new Float32Array((c + 1) * row);
          const vv = new Float32Array((c + 1) * row);
          kk.set(prefix[i]!.k);
          vv.set(prefix[i]!.v);
          kk.set(kNew.subarray(i * row, (i + 1) * row), c * row);
          vv.set(vNew.subarray(i * row, (i + 1) * row), c * row);
          return { k: kk, v: vv, positions: [c] };
        });
        const got = await gpu.readF32(o);
        expect(await gpu.readF32(fused.cache.k[0]!)).toEqual(otherLayer); // another layer's cache is untouched
        // Measured on SwiftShader / lavapipe: at most 2.6e-7 (f32 cache), 6.5e-7 (f16).
        expect(relError(got, pagedRef(qRef, seqs, dims))).toBeLessThan(dtype === 'f16' ? 1e-5 : 2e-6);

        // The two passes it replaces, on a second cache with the same prefix.
        if (qkNormRopeWritesCache(gpu)) {
          const split = cacheWithPrefix(gpu, cached, dims, dtype, prefix);
          const qT = up(q, [S, nHeads, hd], 'q2');
          const pos = gpu.upload(Uint32Array.from(cached), [S], 'u32', 'positions');
          qkNormRope(gpu, qT, up(k, [S, nKv, hd], 'k2'), up(qw, [hd], 'qw'), up(kw, [hd], 'kw'), pos, table, EPS, {
            v: up(v, [S, nKv, hd], 'v2'),
            slots: split.batch.slots,
            kc: split.cache.k[1]!,
            vc: split.cache.v[1]!,
          });
          const o2 = attentionPaged(gpu, qT, split.cache, 1, split.batch, dims);
          expect(relError(got, await gpu.readF32(o2))).toBeLessThan(dtype === 'f16' ? 1e-5 : 1e-6); // measured at most 6e-8
          // Same cache contents: v exactly, k to a rounding of the norm's sum (summed in another order: measured at
          // most 7e-8), which in an f16 cache can flip one element's last bit (2^-11 of it).
          expect(await gpu.readF32(fused.cache.v[1]!)).toEqual(await gpu.readF32(split.cache.v[1]!));
          expect(relError(await gpu.readF32(fused.cache.k[1]!), await gpu.readF32(split.cache.k[1]!))).toBeLessThan(dtype === 'f16' ? 5e-4 : 1e-6);
          releaseBatch(split.batch);
          split.cache.destroy();
        }
        releaseBatch(fused.batch);
        fused.cache.destroy();
        table.release();
      });
    }
  }

  it('refuses a batch that is not one decode token per sequence, and q/k/v of the wrong size', async () => {
    const gpu = await testGpu();
    const dims = { nHeads: 4, nKv: 2, headDim: 16 };
    const cache = new KvCache(gpu, { layers: 1, nKv: 2, headDim: 16, pageSize: PAGE, numPages: 4, dtype: 'f32' });
    const pages = cache.allocate(2);
    const table = new RopeTable(gpu, 16, THETA, 64);
    const extra = (n: number) => ({
      k: gpu.upload(randn(n * 32, 1), [n, 2, 16], 'f32', 'k'),
      v: gpu.upload(randn(n * 32, 2), [n, 2, 16], 'f32', 'v'),
      qkNorm: gpu.upload(randn(32, 3), [2, 16], 'f32', 'qk_norm'),
      cos: table.cos,
      sin: table.sin,
      eps: EPS,
    });
    const prefill = cache.buildBatch([{ pages, cachedLen: 0, newTokens: 3 }]);
    expect(() => attentionPaged(gpu, gpu.upload(randn(3 * 64, 4), [3, 4, 16], 'f32', 'q'), cache, 0, prefill, dims, undefined, extra(3))).toThrow(
      /attention_decode\(qk_norm_rope\): the q\/k norm and RoPE go inside version-2 decode steps only/,
    );
    const step = cache.buildBatch([{ pages, cachedLen: 5, newTokens: 1 }]);
    if (decodeFusesQkNormRope(gpu, dims, 'f32', 1, step)) {
      expect(() => attentionPaged(gpu, gpu.upload(randn(64, 5), [1, 4, 16], 'f32', 'q'), cache, 0, step, dims, undefined, extra(2))).toThrow(/attention_decode\(qk_norm_rope\): k has 64 elements, expected 32/);
    }
    releaseBatch(prefill);
    releaseBatch(step);
    cache.destroy();
    table.release();
  });
});
