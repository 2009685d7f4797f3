import { describe, expect, it } from 'vitest';
import { roundF16 } from '../../src/gpu/dtype.ts';
import { qkNormRope, qkNormRopeWritesCache } from '../../src/kernels/qk-norm-rope.ts';
import { RopeTable, ropeTables } from '../../src/model/rope-table.ts';
import { testGpu } from '../helpers/gpu.ts';
import { randInts, randn, relError } from '../helpers/random.ts';
import { rmsnormRef } from '../ref/rmsnorm.ts';
import { ropeRef } from '../ref/rope.ts';

// [tokens, nHeads, nKv, headDim, max position]: one decode token (Qwen3-0.6B heads), odd head counts and
// rows that do not fill the last workgroup, head dims below and above the 32-lane team (2, 24, 128).
const CASES: [number, number, number, number, number][] = [
  [1, 16, 8, 128, 1024],
  [5, 3, 1, 24, 17],
  [7, 4, 2, 2, 40_000],
  [33, 2, 1, 128, 600],
];
const EPS = 1e-6;

describe('qk_norm_rope', () => {
  for (const dtype of ['f32', 'f16'] as const) {
    for (const [tokens, nHeads, nKv, hd, maxPos] of CASES) {
      it(`${dtype} T=${tokens} heads=${nHeads}/${nKv} hd=${hd} positions<${maxPos}`, async (ctx) => {
        const gpu = await testGpu();
        if (dtype === 'f16' && !gpu.f16) return ctx.skip();
        const round = dtype === 'f16' ? roundF16 : (a: Float32Array) => a;
        const tol = dtype === 'f16' ? 3e-3 : 2e-6;
        const theta = 1e6;
        const table = new RopeTable(gpu, hd, theta, maxPos);
        const { cos, sin } = ropeTables(hd, theta, maxPos);
        const pos = randInts(tokens, tokens + hd, maxPos);
        pos[0] = maxPos - 1;
        const q = round(randn(tokens * nHeads * hd, tokens + nHeads, 3));
        const k = round(randn(tokens * nKv * hd, tokens + nKv + 100, 0.5));
        const qw = randn(hd, hd + 1);
        const kw = randn(hd, hd + 2);
        const qT = gpu.upload(q, [tokens, nHeads, hd], dtype, 'q');
        const kT = gpu.upload(k, [tokens, nKv, hd], dtype, 'k');
        const posT = gpu.upload(pos, [tokens], 'u32', 'positions');
        qkNormRope(gpu, qT, kT, gpu.upload(qw, [hd], 'f32', 'q_norm'), gpu.upload(kw, [hd], 'f32', 'k_norm'), posT, table, EPS);
        // The reference of the two passes it replaces: per-head norm (stored as T), then rope.
        const qRef = ropeRef(round(Float32Array.from(rmsnormRef(q, qw, EPS).y)), nHeads, hd, pos, cos, sin);
        const kRef = ropeRef(round(Float32Array.from(rmsnormRef(k, kw, EPS).y)), nKv, hd, pos, cos, sin);
        expect(relError(await gpu.readF32(qT), qRef)).toBeLessThan(tol);
        expect(relError(await gpu.readF32(kT), kRef)).toBeLessThan(tol);
        table.release();
      });
    }
  }

  // to_cache: q as above; k's result and v land in their (shuffled) cache slots, other slots and k untouched.
  for (const [act, cacheDtype] of [['f32', 'f32'], ['f32', 'f16'], ['f16', 'f16']] as const) {
    for (const [tokens, nHeads, nKv, hd, maxPos] of CASES) {
      it(`to_cache: ${act} into a ${cacheDtype} cache, T=${tokens} heads=${nHeads}/${nKv} hd=${hd}`, async (ctx) => {
        const gpu = await testGpu();
        if ((act === 'f16' || cacheDtype === 'f16') && !gpu.f16) return ctx.skip();
        if (!qkNormRopeWritesCache(gpu)) return ctx.skip('the device binds fewer than 11 storage buffers a stage');
        const round = act === 'f16' ? roundF16 : (a: Float32Array) => a;
        const roundCache = cacheDtype === 'f16' ? roundF16 : (a: Float32Array) => a;
        const tol = act === 'f16' || cacheDtype === 'f16' ? 3e-3 : 2e-6;
        const theta = 1e6;
        const table = new RopeTable(gpu, hd, theta, maxPos);
        const { cos, sin } = ropeTables(hd, theta, maxPos);
        const pos = randInts(tokens, tokens + hd + 7, maxPos);
        const q = round(randn(tokens * nHeads * hd, tokens + nHeads + 5, 3));
        const k = round(randn(tokens * nKv * hd, tokens + nKv + 105, 0.5));
        const v = round(randn(tokens * nKv * hd, tokens + nKv + 205, 2));
        const qw = randn(hd, hd + 11);
        const kw = randn(hd, hd + 12);
        const row = nKv * hd;
        const numSlots = tokens + 9;
        // Distinct slots in shuffled order, some past the first tokens' rows.
        const order = randn(numSlots, tokens + 4);
        const slotsUsed = Uint32Array.from(Array.from({ length: numSlots }, (_, i) => i).sort((a, b) => order[a]! - order[b]!).slice(0, tokens));
        const kcInit = roundCache(randn(numSlots * row, 41));
        const vcInit = roundCache(randn(numSlots * row, 42));
        const qT = gpu.upload(q, [tokens, nHeads, hd], act, 'q');
        const kT = gpu.upload(k, [tokens, nKv, hd], act, 'k');
        const vT = gpu.upload(v, [tokens, nKv, hd], act, 'v');
        const kc = gpu.upload(kcInit, [numSlots, nKv, hd], cacheDtype, 'kc');
        const vc = gpu.upload(vcInit, [numSlots, nKv, hd], cacheDtype, 'vc');
        const posT = gpu.upload(pos, [tokens], 'u32', 'positions');
        const slotT = gpu.upload(slotsUsed, [tokens], 'u32', 'slots');
        qkNormRope(gpu, qT, kT, gpu.upload(qw, [hd], 'f32', 'q_norm'), gpu.upload(kw, [hd], 'f32', 'k_norm'), posT, table, EPS, { v: vT, slots: slotT, kc, vc });
        const qRef = ropeRef(round(Float32Array.from(rmsnormRef(q, qw, EPS).y)), nHeads, hd, pos, cos, sin);
        const kRef = roundCache(round(Float32Array.from(ropeRef(round(Float32Array.from(rmsnormRef(k, kw, EPS).y)), nKv, hd, pos, cos, sin))));
        const kcWant = Float32Array.from(kcInit);
        const vcWant = Float32Array.from(vcInit);
        for (let t = 0; t < tokens; t++) {
          kcWant.set(kRef.subarray(t * row, (t + 1) * row), slotsUsed[t]! * row);
          vcWant.set(roundCache(v.subarray(t * row, (t + 1) * row)), slotsUsed[t]! * row);
        }
        expect(relError(await gpu.readF32(qT), qRef)).toBeLessThan(tol);
        expect(relError(await gpu.readF32(kc), kcWant)).toBeLessThan(tol);
        expect(await gpu.readF32(vc)).toEqual(vcWant);
        expect(await gpu.readF32(kT)).toEqual(k);
        table.release();
      });
    }
  }

  it('rejects k with another head dim or token count than q', async () => {
    const gpu = await testGpu();
    const table = new RopeTable(gpu, 8, 10000);
    const q = gpu.upload(randn(16, 1), [1, 2, 8], 'f32', 'q');
    const k = gpu.upload(randn(16, 2), [2, 1, 8], 'f32', 'k');
    const w = gpu.upload(randn(8, 3), [8], 'f32', 'norm');
    const p = gpu.upload([0], [1], 'u32', 'positions');
    expect(() => qkNormRope(gpu, q, k, w, w, p, table, EPS)).toThrow(/qk_norm_rope: k has shape \[2,1,8\], expected \[1,1,8\]/);
  });
});
