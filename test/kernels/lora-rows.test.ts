import { describe, expect, it } from 'vitest';
import { roundF16 } from '../../src/gpu/dtype.ts';
import { loraRows, loraRowTiles, NO_ADAPTER, rowsBySlot } from '../../src/kernels/lora-rows.ts';
import { testGpu } from '../helpers/gpu.ts';
import { randInts, randn, relError } from '../helpers/random.ts';
import { loraRowsRef } from '../ref/lora-rows.ts';

interface Case {
  T: number;
  in: number;
  out: number;
  /** Each adapter's rank; the bank's slot rank is the largest. 0: the adapter lacks the module. */
  ranks: number[];
  /** How rows name adapters: interleaved at random (default), sorted by adapter, or all one adapter. */
  order?: 'mixed' | 'sorted' | 'one';
}

// Odd sizes, more than one expand workgroup (out > 256), a rank-0 adapter, mixed ranks, tiles of 16 rows
// full and partial (more than 16 rows of one adapter), thousands of tiles. (Tiles past one grid dimension,
// 65535 · 16 rows, take SwiftShader 90 s: left to tileGrid's fold, the same as every kernel's.)
const CASES: Case[] = [
  { T: 1, in: 7, out: 5, ranks: [3] },
  // in long enough to split in parts (few rows), rank over one 64-rank block
  { T: 3, in: 1030, out: 40, ranks: [70, 3] },
  // rank over expand's 256 ranks at a time
  { T: 12, in: 20, out: 270, ranks: [300, 5] },
  { T: 9, in: 64, out: 160, ranks: [4, 4, 4] },
  { T: 13, in: 130, out: 300, ranks: [5, 2, 0, 1] },
  { T: 37, in: 65, out: 257, ranks: [8, 3] },
  { T: 20_001, in: 4, out: 3, ranks: [1, 2] },
  { T: 50, in: 200, out: 70, ranks: [16, 9], order: 'sorted' },
  { T: 33, in: 128, out: 64, ranks: [64], order: 'one' },
];

/** Rows' slots, about one in five with no adapter unless all are one adapter. */
function rowAdapters(T: number, n: number, seed: number, order: Case['order'] = 'mixed'): Uint32Array {
  if (order === 'one') return new Uint32Array(T);
  const r = randInts(T, seed, 5 * n).map((v) => (v >= 4 * n ? NO_ADAPTER : v % n));
  return order === 'sorted' ? r.sort() : r;
}

describe('lora_rows', () => {
  for (const dtype of ['f32', 'f16'] as const) {
    for (const c of CASES) {
      it(`${dtype} T=${c.T} in=${c.in} out=${c.out} ranks=[${c.ranks}] ${c.order ?? 'mixed'}`, async (ctx) => {
        const gpu = await testGpu();
        if (dtype === 'f16' && !gpu.f16) return ctx.skip();
        const round = dtype === 'f16' ? roundF16 : (v: Float32Array) => v;
        const n = c.ranks.length;
        const r = Math.max(...c.ranks);
        const d = { T: c.T, in: c.in, out: c.out, r };
        // Slots are filled past each adapter's rank too: the kernel must not read there.
        const x = round(randn(c.T * c.in, 1 + c.T));
        const A = round(randn(n * r * c.in, 2 + c.in, 0.5));
        const B = round(randn(n * c.out * r, 3 + c.out, 0.5));
        const y = randn(c.T * c.out, 4 + c.T);
        const scale = Float32Array.from(c.ranks, (k, i) => 0.5 + i / (k || 1));
        const rank = Uint32Array.from(c.ranks);
        const rows = rowAdapters(c.T, n, 5 + c.T, c.order);
        const ty = gpu.upload(y, [c.T, c.out], 'f32', 'y');
        // The bank holds them transposed (Aᵀ [in, r], Bᵀ [r, out] per slot); past a rank it holds junk.
        const AT = round(randn(n * c.in * r, 6 + c.in));
        const BT = round(randn(n * r * c.out, 7 + c.out));
        for (let a = 0; a < n; a++) {
          for (let j = 0; j < r; j++) for (let k = 0; k < c.in; k++) AT[(a * c.in + k) * r + j] = A[(a * r + j) * c.in + k]!;
          for (let j = 0; j < c.ranks[a]!; j++) for (let o = 0; o < c.out; o++) BT[(a * r + j) * c.out + o] = B[a * c.out * r + o * c.ranks[a]! + j]!;
        }
        const bank = {
          A: gpu.upload(AT, [n, c.in, r], dtype, 'bank.A'),
          B: gpu.upload(BT, [n, r, c.out], dtype, 'bank.B'),
          scale: gpu.upload(scale, [n], 'f32', 'bank.scale'),
          rank: gpu.upload(rank, [n], 'u32', 'bank.rank'),
        };
        loraRows(gpu, gpu.upload(x, [c.T, c.in], dtype, 'x'), ty, loraRowTiles(gpu, rowsBySlot(rows, n)), bank);
        const want = loraRowsRef(x, y, rows, A, B, scale, rank, d);
        const got = await gpu.readF32(ty);
        expect(relError(got, want)).toBeLessThan(1e-5);
        // Rows without an adapter are left exactly as they were.
        let changed = 0;
        for (let t = 0; t < c.T; t++) {
          if (rows[t] !== NO_ADAPTER) continue;
          for (let o = 0; o < c.out; o++) if (got[t * c.out + o] !== y[t * c.out + o]) changed++;
        }
        expect(changed).toBe(0);
      });
    }
  }

  it('rejects mismatched shapes and dtypes, naming the tensor', async () => {
    const gpu = await testGpu();
    const bank = {
      A: gpu.upload(randn(2 * 8 * 4, 1), [2, 8, 4], 'f32', 'bank.A'),
      B: gpu.upload(randn(2 * 4 * 6, 2), [2, 4, 6], 'f32', 'bank.B'),
      scale: gpu.upload([1, 1], [2], 'f32', 'bank.scale'),
      rank: gpu.upload([4, 4], [2], 'u32', 'bank.rank'),
    };
    const x = gpu.upload(randn(3 * 8, 3), [3, 8], 'f32', 'x');
    const y = gpu.upload(randn(3 * 6, 4), [3, 6], 'f32', 'y');
    const rows = loraRowTiles(gpu, rowsBySlot(Uint32Array.of(0, 1, NO_ADAPTER), 2), 'tiles');
    expect(() => loraRows(gpu, gpu.upload(randn(3 * 9, 5), [3, 9], 'f32', 'wide_x'), y, rows, bank)).toThrow(/bank.A/);
    expect(() => loraRows(gpu, x, gpu.upload(randn(3 * 7, 6), [3, 7], 'f32', 'wide_y'), rows, bank)).toThrow(/bank.B/);
    expect(() => loraRows(gpu, x, y, loraRowTiles(gpu, rowsBySlot(Uint32Array.of(0, 1), 2), 'short_tiles'), bank)).toThrow(/short_tiles tiles a batch of 2 rows, x has 3/);
    const floatTiles = { ...rows, tiles: gpu.upload(new Float32Array(2 * 18), [2 * 18], 'f32', 'float_tiles') };
    expect(() => loraRows(gpu, x, y, floatTiles, bank)).toThrow(/float_tiles is f32/);
    loraRows(gpu, x, y, rows, bank);
    await gpu.sync();
  });
});
