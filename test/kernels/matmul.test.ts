import { describe, expect, it } from 'vitest';
import { roundF16 } from '../../src/gpu/dtype.ts';
import { matmul, matmulRowsGlu, matmulRowsNorm, matmulRowsParts, matmulSplit, matmulSupports, matmulVariant, matmulWith, type MatmulVariant, rowsGluApplies, rowsNormApplies, rowsPartsApply, setMatmulPolicy } from '../../src/kernels/matmul.ts';
import { rmsnorm } from '../../src/kernels/rmsnorm.ts';
import { swiglu } from '../../src/kernels/swiglu.ts';
import { swigluRef } from '../ref/swiglu.ts';
import { testGpu } from '../helpers/gpu.ts';
import { randn, relError } from '../helpers/random.ts';
import { matmulRef } from '../ref/matmul.ts';
import { rmsnormRef } from '../ref/rmsnorm.ts';

type Layout = [transA: boolean, transB: boolean];
type Shape = [M: number, N: number, K: number];
const LAYOUTS: Layout[] = [
  [false, false],
  [false, true],
  [true, false],
  [true, true],
];
// Odd edges (tile64), M <= 16 with K % 4 == 0 (rows), vec4-aligned past one 64 / 128 tile (tile64v,
// tile128), few output tiles with a long K (64-tiles split along K).
const SHAPES: Shape[] = [
  [1, 1, 1],
  [3, 5, 7],
  [17, 33, 65],
  [130, 257, 129],
  [1, 72, 36],
  [5, 67, 40],
  [5, 20, 520],
  [16, 9, 132],
  [132, 136, 52],
  [257, 130, 20],
  [16, 24, 2000],
  [70, 5, 1030],
];
const F16_SHAPES: Shape[] = [
  [5, 67, 40],
  [17, 33, 65],
  [132, 136, 52],
];
const VARIANTS: MatmulVariant[] = ['tile64', 'tile64v', 'tile128', 'rows'];

const layoutName = ([ta, tb]: Layout) => `${ta ? 'Aᵀ' : 'A'}·${tb ? 'Bᵀ' : 'B'}`;

/** Every (variant, layout, shape) the variant supports, whatever matmul() would pick there. */
function cases(shapes: Shape[]): [MatmulVariant, Layout, Shape][] {
  const out: [MatmulVariant, Layout, Shape][] = [];
  for (const v of VARIANTS) {
    for (const layout of LAYOUTS) {
      for (const shape of shapes) {
        const [M, N, K] = shape;
        if (matmulSupports(v, { M, N, K, transA: layout[0], transB: layout[1] })) out.push([v, layout, shape]);
      }
    }
  }
  return out;
}

describe('matmul', () => {
  it('chooses rows for decode, tile128 / tile64v for large / small aligned products, tile64 otherwise', () => {
    const xWt = (M: number, N: number, K: number) => matmulVariant({ M, N, K, transA: false, transB: true });
    expect(xWt(1, 3072, 1024)).toBe('rows');
    expect(xWt(16, 151_936, 1024)).toBe('rows');
    expect(xWt(4096, 4096, 4096)).toBe('tile128');
    expect(xWt(2048, 3072, 1023)).toBe('tile64');
    expect(xWt(17, 33, 65)).toBe('tile64');
    expect(matmulVariant({ M: 4096, N: 4096, K: 4096, transA: true, transB: false })).toBe('tile128');
    expect(xWt(512, 1024, 1024)).toBe('tile64v');
    expect(matmulVariant({ M: 8, N: 1024, K: 1024, transA: false, transB: false })).toBe('tile64v');
    expect(matmulVariant({ M: 16, N: 1024, K: 8192, transA: true, transB: false })).toBe('tile64v');
  });

  it('splits K only for few output tiles and a long K, in 16-deep multiples covering K', () => {
    const split = (M: number, N: number, K: number) => matmulSplit({ M, N, K, transA: true, transB: false });
    expect(split(4096, 4096, 4096).splits).toBe(1);
    expect(split(16, 24, 500).splits).toBe(1);
    for (const [M, N, K] of [[16, 24, 2000], [70, 5, 1030], [16, 1024, 8192]] as Shape[]) {
      const { splits, kChunk } = split(M, N, K);
      expect(splits).toBeGreaterThan(1);
      expect(kChunk % 16).toBe(0);
      expect((splits - 1) * kChunk).toBeLessThan(K);
      expect(splits * kChunk).toBeGreaterThanOrEqual(K);
    }
  });

  for (const [v, layout, [M, N, K]] of cases(SHAPES)) {
    const [transA, transB] = layout;
    it(`${v} f32 ${layoutName(layout)} ${M}x${N}x${K}, then alpha and accumulate`, async () => {
      const gpu = await testGpu();
      const seed = M * 7919 + N * 131 + K + (transA ? 1e6 : 0) + (transB ? 2e6 : 0);
      const a = randn(M * K, seed);
      const b = randn(K * N, seed + 1);
      const ta = gpu.upload(a, transA ? [K, M] : [M, K], 'f32', 'a');
      const tb = gpu.upload(b, transB ? [N, K] : [K, N], 'f32', 'b');
      const out = matmulWith(gpu, v, ta, tb, { transA, transB });
      expect(out.shape).toEqual([M, N]);
      expect(relError(await gpu.readF32(out), matmulRef(a, b, M, N, K, { transA, transB }))).toBeLessThan(1e-5);
      const init = randn(M * N, seed + 2);
      gpu.write(out, init);
      matmulWith(gpu, v, ta, tb, { transA, transB, alpha: -0.5, accumulate: true, out });
      const want = matmulRef(a, b, M, N, K, { transA, transB, alpha: -0.5, init });
      expect(relError(await gpu.readF32(out), want)).toBeLessThan(1e-5);
      for (const t of [ta, tb, out]) t.release();
    });
  }

  // f16 storage of b (weights), then of both; f32 accumulation, so the products of rounded inputs are exact-ish.
  for (const [v, layout, [M, N, K]] of cases(F16_SHAPES)) {
    for (const both of [false, true]) {
      const [transA, transB] = layout;
      it(`${v} f16 ${both ? 'a,b' : 'b'} ${layoutName(layout)} ${M}x${N}x${K}`, async (ctx) => {
        const gpu = await testGpu();
        if (!gpu.f16) return ctx.skip();
        const seed = M + N * 3 + K * 5 + (both ? 99 : 0);
        const a = both ? roundF16(randn(M * K, seed)) : randn(M * K, seed);
        const b = roundF16(randn(K * N, seed + 1));
        const ta = gpu.upload(a, transA ? [K, M] : [M, K], both ? 'f16' : 'f32', 'a');
        const tb = gpu.upload(b, transB ? [N, K] : [K, N], 'f16', 'b');
        const out = matmulWith(gpu, v, ta, tb, { transA, transB, alpha: 1.5 });
        expect(relError(await gpu.readF32(out), matmulRef(a, b, M, N, K, { transA, transB, alpha: 1.5 }))).toBeLessThan(1e-5);
        for (const t of [ta, tb, out]) t.release();
      });
    }
  }

  it('matmul() picks a variant and computes x·Wᵀ', async () => {
    const gpu = await testGpu();
    const x = randn(6 * 20, 41);
    const w = randn(10 * 20, 42);
    const y = matmul(gpu, gpu.upload(x, [6, 20], 'f32', 'x'), gpu.upload(w, [10, 20], 'f32', 'w'), { transB: true });
    expect(relError(await gpu.readF32(y), matmulRef(x, w, 6, 10, 20, { transB: true }))).toBeLessThan(1e-5);
  });

  it('rejects mismatched inner dimensions, a bad out and an unsupported variant, naming the tensors', async () => {
    const gpu = await testGpu();
    const a = gpu.upload(randn(12, 1), [3, 4], 'f32', 'x');
    const b = gpu.upload(randn(15, 2), [5, 3], 'f32', 'weight');
    expect(() => matmul(gpu, a, b)).toThrow(/inner dimensions differ: x \[3,4\] · weight \[5,3\]/);
    const w = gpu.upload(randn(20, 3), [5, 4], 'f32', 'w');
    const bad = gpu.tensor([3, 4], 'f32', 'y');
    expect(() => matmul(gpu, a, w, { transB: true, out: bad })).toThrow(/y has shape \[3,4\], expected \[3,5\]/);
    expect(() => matmul(gpu, a, w, { transB: true, accumulate: true })).toThrow(/accumulate needs opts.out/);
    const odd = gpu.upload(randn(15, 4), [3, 5], 'f32', 'odd');
    const w2 = gpu.upload(randn(10, 5), [2, 5], 'f32', 'w2');
    expect(() => matmulWith(gpu, 'tile128', odd, w2, { transB: true })).toThrow(/variant tile128 cannot compute 3x2x5/);
  });
});

describe('matmulRowsParts (q, k, v or gate, up in one matmul_rows dispatch)', () => {
  // [M, K, N per part]: one decode row, a partial row group, 16 rows; parts whose columns end mid-workgroup.
  const CASES: [number, number, number[]][] = [
    [1, 64, [24, 8, 8]],
    [5, 40, [13, 27]],
    [16, 132, [33, 9, 70]],
    [3, 256, [200, 200]],
    [2, 1160, [40, 9, 17]], // K past one 8-load step (K/4 = 290 = 256 + 34)
  ];
  for (const wDtype of ['f32', 'f16'] as const) {
    for (const [M, K, Ns] of CASES) {
      it(`${wDtype} weights: M=${M} K=${K} N=[${Ns}]: the numbers of separate matmul_rows calls`, async (ctx) => {
        const gpu = await testGpu();
        if (wDtype === 'f16' && !gpu.f16) return ctx.skip();
        const prev = setMatmulPolicy(gpu, 'rows');
        try {
          const round = wDtype === 'f16' ? roundF16 : (x: Float32Array) => x;
          const x = randn(M * K, M + K);
          const ws = Ns.map((n, i) => round(randn(n * K, 100 + i)));
          const tx = gpu.upload(x, [M, K], 'f32', 'x');
          const tw = ws.map((w, i) => gpu.upload(w, [Ns[i]!, K], wDtype, `w${i}`));
          expect(rowsPartsApply(gpu, tx, tw)).toBe(true);
          const outs = matmulRowsParts(gpu, tx, tw, Ns.map((_, i) => `part${i}`));
          for (let i = 0; i < Ns.length; i++) {
            const got = await gpu.readF32(outs[i]!);
            expect(relError(got, matmulRef(x, ws[i]!, M, Ns[i]!, K, { transB: true }))).toBeLessThan(1e-5);
            expect(got).toEqual(await gpu.readF32(matmulWith(gpu, 'rows', tx, tw[i]!, { transB: true })));
          }
        } finally {
          setMatmulPolicy(gpu, prev);
        }
      });
    }
  }

  it('applies only where every part is a matmul_rows product, and refuses the rest by name', async () => {
    const gpu = await testGpu();
    const prev = setMatmulPolicy(gpu, 'rows');
    try {
      const x = gpu.upload(randn(2 * 8, 1), [2, 8], 'f32', 'x');
      const w = gpu.upload(randn(4 * 8, 2), [4, 8], 'f32', 'w');
      const other = gpu.upload(randn(4 * 12, 3), [4, 12], 'f32', 'other');
      expect(rowsPartsApply(gpu, x, [w])).toBe(false);
      expect(rowsPartsApply(gpu, x, [w, other])).toBe(false);
      expect(rowsPartsApply(gpu, gpu.upload(randn(17 * 8, 4), [17, 8], 'f32', 'tall'), [w, w])).toBe(false);
      expect(() => matmulRowsParts(gpu, x, [w, other], ['a', 'b'])).toThrow(/matmul_rows\(a,b\): x \[2,8\] with weights \[4,8\], \[4,12\] is not a matmul_rows product/);
      setMatmulPolicy(gpu, 'f32');
      expect(rowsPartsApply(gpu, x, [w, w])).toBe(gpu.report.cpuDriver !== 'SwiftShader');
    } finally {
      setMatmulPolicy(gpu, prev);
    }
  });
});

describe('matmulRowsGlu (SwiGLU read inside down_proj\'s matmul_rows pass)', () => {
  // [M, K, N]: one decode row, a partial row group, 16 rows, columns that end mid-workgroup.
  const CASES: [number, number, number][] = [
    [1, 96, 24],
    [5, 40, 13],
    [16, 132, 70],
    [1, 2056, 24], // two 8-load steps and two single loads
  ];
  for (const wDtype of ['f32', 'f16'] as const) {
    for (const [M, K, N] of CASES) {
      it(`${wDtype} weights: M=${M} K=${K} N=${N}: (silu(gate)·up)·Wᵀ, the numbers of swiglu then matmul_rows`, async (ctx) => {
        const gpu = await testGpu();
        if (wDtype === 'f16' && !gpu.f16) return ctx.skip();
        const prev = setMatmulPolicy(gpu, 'rows');
        try {
          const round = wDtype === 'f16' ? roundF16 : (x: Float32Array) => x;
          // gate up to ±6 (silu's curved part and its tails), up ±1
          const gate = randn(M * K, 7 + M).map((v) => 3 * v);
          const up = randn(M * K, 8 + K);
          const w = round(randn(N * K, 9 + N));
          const [tg, tu] = [gpu.upload(gate, [M, K], 'f32', 'gate'), gpu.upload(up, [M, K], 'f32', 'up')];
          const tw = gpu.upload(w, [N, K], wDtype, 'down');
          expect(rowsGluApplies(gpu, tg, tu, tw)).toBe(true);
          const got = await gpu.readF32(matmulRowsGlu(gpu, tg, tu, tw));
          expect(relError(got, matmulRef(Float32Array.from(swigluRef(gate, up)), w, M, N, K, { transB: true }))).toBeLessThan(1e-5);
          const twoPasses = await gpu.readF32(matmulWith(gpu, 'rows', swiglu(gpu, tg, tu), tw, { transB: true }));
          expect(relError(got, twoPasses)).toBeLessThan(1e-6);
          // into a residual stream: added there, the tensor returned
          const residual = randn(M * N, 10 + M);
          const tr = gpu.upload(residual, [M, N], 'f32', 'residual');
          expect(matmulRowsGlu(gpu, tg, tu, tw, 'down_proj', tr)).toBe(tr);
          expect(relError(await gpu.readF32(tr), residual.map((v, i) => v + got[i]!))).toBeLessThan(1e-6);
        } finally {
          setMatmulPolicy(gpu, prev);
        }
      });
    }
  }

  it('applies only to a matmul_rows product of matching gate and up, and refuses the rest by name', async () => {
    const gpu = await testGpu();
    const prev = setMatmulPolicy(gpu, 'rows');
    try {
      const g = gpu.upload(randn(2 * 8, 1), [2, 8], 'f32', 'g');
      const w = gpu.upload(randn(4 * 8, 2), [4, 8], 'f32', 'w');
      expect(rowsGluApplies(gpu, g, gpu.upload(randn(3 * 8, 3), [3, 8], 'f32', 'u3'), w)).toBe(false);
      expect(rowsGluApplies(gpu, g, g, gpu.upload(randn(4 * 12, 4), [4, 12], 'f32', 'w12'))).toBe(false);
      const tall = gpu.upload(randn(17 * 8, 5), [17, 8], 'f32', 'tall');
      expect(rowsGluApplies(gpu, tall, tall, w)).toBe(false);
      expect(() => matmulRowsGlu(gpu, tall, tall, w)).toThrow(/matmul_rows\(swiglu, down_proj\): tall \[17,8\], tall \[17,8\] with weight \[4,8\] is not a matmul_rows SwiGLU product/);
    } finally {
      setMatmulPolicy(gpu, prev);
    }
  });
});

describe('matmulRowsNorm (the RMSNorm before a product read inside its matmul_rows pass)', () => {
  // [M, K, N]: one decode row, a partial row group with K past one 4-deep loop step, 16 rows, 1-3 weights.
  const CASES: [number, number, number[]][] = [
    [1, 96, [24]],
    [5, 40, [13, 27]],
    [7, 520, [9, 17, 8]],
    [6, 1036, [11, 20]], // one 8-load step and three single loads
    [16, 132, [33, 9, 70]],
  ];
  for (const wDtype of ['f32', 'f16'] as const) {
    for (const [M, K, Ns] of CASES) {
      it(`${wDtype} weights: M=${M} K=${K} N=[${Ns}]: rmsnorm(x)·Wᵀ, the numbers of rmsnorm then matmul_rows`, async (ctx) => {
        const gpu = await testGpu();
        if (wDtype === 'f16' && !gpu.f16) return ctx.skip();
        const prev = setMatmulPolicy(gpu, 'rows');
        try {
          const round = wDtype === 'f16' ? roundF16 : (x: Float32Array) => x;
          // rows of different scales (a residual stream grows through the layers), a norm weight around 1
          const x = randn(M * K, 3 + M).map((v, i) => v * (0.5 + 4 * (Math.floor(i / K) % 3)));
          const g = randn(K, 4 + K).map((v) => 1 + 0.5 * v);
          const ws = Ns.map((n, i) => round(randn(n * K, 200 + i)));
          const eps = 1e-6;
          const tx = gpu.upload(x, [M, K], 'f32', 'x');
          const tg = gpu.upload(g, [K], 'f32', 'norm');
          const tw = ws.map((w, i) => gpu.upload(w, [Ns[i]!, K], wDtype, `w${i}`));
          expect(rowsNormApplies(gpu, tx, tg, tw)).toBe(true);
          const outs = matmulRowsNorm(gpu, tx, tg, eps, tw, Ns.map((_, i) => `part${i}`));
          const normed = Float32Array.from(rmsnormRef(x, g, eps).y);
          const n = rmsnorm(gpu, tx, tg, eps).y;
          for (let i = 0; i < Ns.length; i++) {
            const got = await gpu.readF32(outs[i]!);
            expect(relError(got, matmulRef(normed, ws[i]!, M, Ns[i]!, K, { transB: true }))).toBeLessThan(1e-5);
            expect(relError(got, await gpu.readF32(matmulWith(gpu, 'rows', n, tw[i]!, { transB: true })))).toBeLessThan(1e-6);
          }
        } finally {
          setMatmulPolicy(gpu, prev);
        }
      });
    }
  }

  it('applies only to f32 x with a matching f32 norm weight on matmul_rows products, and refuses the rest by name', async () => {
    const gpu = await testGpu();
    const prev = setMatmulPolicy(gpu, 'rows');
    try {
      const x = gpu.upload(randn(2 * 8, 1), [2, 8], 'f32', 'x');
      const w = gpu.upload(randn(4 * 8, 2), [4, 8], 'f32', 'w');
      const norm = gpu.upload(randn(8, 3), [8], 'f32', 'norm');
      expect(rowsNormApplies(gpu, x, norm, [w])).toBe(true);
      expect(rowsNormApplies(gpu, x, gpu.upload(randn(12, 4), [12], 'f32', 'norm12'), [w])).toBe(false);
      expect(rowsNormApplies(gpu, x, norm, [w, w, w, w])).toBe(false);
      const tall = gpu.upload(randn(17 * 8, 5), [17, 8], 'f32', 'tall');
      expect(rowsNormApplies(gpu, tall, norm, [w])).toBe(false);
      expect(() => matmulRowsNorm(gpu, tall, norm, 1e-6, [w], ['lm_head'])).toThrow(/matmul_rows\(rmsnorm, lm_head\): tall \[17,8\] \(f32\) with norm norm \[8\] \(f32\) and weights \[4,8\] is not a normed matmul_rows product/);
      expect(() => matmulRowsNorm(gpu, x, norm, Number.NaN, [w], ['q'])).toThrow(/eps NaN/);
    } finally {
      setMatmulPolicy(gpu, prev);
    }
  });
});
