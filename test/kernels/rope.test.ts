import { describe, expect, it } from 'vitest';
import { roundF16 } from '../../src/gpu/dtype.ts';
import { rope, ropeBackward } from '../../src/kernels/rope.ts';
import { RopeTable, ropeInvFreq, ropeTables } from '../../src/model/rope-table.ts';
import { dot, numericGrad } from '../helpers/finite-diff.ts';
import { testGpu } from '../helpers/gpu.ts';
import { randInts, randn, relError } from '../helpers/random.ts';
import { ropeRef } from '../ref/rope.ts';

// [tokens, heads, headDim, max position]
const CASES: [number, number, number, number][] = [
  [1, 1, 2, 1],
  [5, 4, 24, 17],
  [9, 2, 16, 40_000],
  [33, 3, 128, 600],
];

describe('rope', () => {
  it('tables follow the HF recipe in f32', () => {
    // inv_freq for hd 4, theta 10000: [1, 1/100]; positions are multiplied in f32.
    const inv = ropeInvFreq(4, 10000);
    expect(inv[0]).toBe(1);
    expect(inv[1]).toBe(Math.fround(1 / 100));
    const { cos, sin } = ropeTables(4, 10000, 3);
    expect(cos[2 * 2 + 1]).toBe(Math.fround(Math.cos(Math.fround(2 * inv[1]!))));
    expect(sin[2 * 2 + 0]).toBe(Math.fround(Math.sin(2)));
  });

  for (const dtype of ['f32', 'f16'] as const) {
    for (const [tokens, heads, hd, maxPos] of CASES) {
      it(`${dtype} T=${tokens} heads=${heads} hd=${hd} positions<${maxPos}`, async (ctx) => {
        const gpu = await testGpu();
        if (dtype === 'f16' && !gpu.f16) return ctx.skip();
        const round = dtype === 'f16' ? roundF16 : (a: Float32Array) => a;
        const tol = dtype === 'f16' ? 2e-3 : 2e-6;
        const theta = 1e6;
        const table = new RopeTable(gpu, hd, theta, 4);
        table.ensure(maxPos);
        expect(table.positions).toBeGreaterThanOrEqual(maxPos);
        const { cos, sin } = ropeTables(hd, theta, maxPos);
        const pos = randInts(tokens, tokens + hd, maxPos);
        pos[0] = maxPos - 1;
        const x = round(randn(tokens * heads * hd, tokens * heads + hd));
        const posT = gpu.upload(pos, [tokens], 'u32', 'positions');
        const xT = gpu.upload(x, [tokens, heads, hd], dtype, 'q');
        rope(gpu, xT, posT, table);
        const fwd = ropeRef(x, heads, hd, pos, cos, sin);
        expect(relError(await gpu.readF32(xT), fwd)).toBeLessThan(tol);
        ropeBackward(gpu, xT, posT, table); // rotating back by −θ recovers x
        expect(relError(await gpu.readF32(xT), x)).toBeLessThan(2 * tol);
        table.release();
      });
    }
  }

  it('reference backward (rotation by −θ) matches finite differences', () => {
    const [heads, hd] = [2, 6];
    const pos = Uint32Array.from([0, 3, 7]);
    const { cos, sin } = ropeTables(hd, 10000, 8);
    const x = randn(3 * heads * hd, 5);
    const dy = randn(3 * heads * hd, 6);
    const analytic = ropeRef(dy, heads, hd, pos, cos, sin, -1);
    expect(relError(analytic, numericGrad((v) => dot(ropeRef(v, heads, hd, pos, cos, sin), dy), x))).toBeLessThan(1e-7);
  });

  it('rejects a tensor whose head dim differs from the table', async () => {
    const gpu = await testGpu();
    const table = new RopeTable(gpu, 8, 10000);
    const x = gpu.upload(randn(16, 1), [1, 1, 16], 'f32', 'k');
    const p = gpu.upload([0], [1], 'u32', 'positions');
    expect(() => rope(gpu, x, p, table)).toThrow(/k head dim 16 but the rope table is for 8/);
  });
});
