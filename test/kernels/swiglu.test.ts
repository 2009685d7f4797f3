import { describe, expect, it } from 'vitest';
import { roundF16 } from '../../src/gpu/dtype.ts';
import { swiglu, swigluBackward } from '../../src/kernels/swiglu.ts';
import { dot, numericGrad } from '../helpers/finite-diff.ts';
import { testGpu } from '../helpers/gpu.ts';
import { randn, relError } from '../helpers/random.ts';
import { swigluBackwardRef, swigluRef } from '../ref/swiglu.ts';

const SHAPES: [number, number][] = [
  [1, 1],
  [3, 160],
  [7, 97],
  [130, 301],
];

describe('swiglu', () => {
  for (const dtype of ['f32', 'f16'] as const) {
    for (const [t, inter] of SHAPES) {
      it(`${dtype} [${t}, ${inter}] forward and backward`, async (ctx) => {
        const gpu = await testGpu();
        if (dtype === 'f16' && !gpu.f16) return ctx.skip();
        const round = dtype === 'f16' ? roundF16 : (a: Float32Array) => a;
        const tol = dtype === 'f16' ? 2e-3 : 2e-6;
        const n = t * inter;
        const gate = round(randn(n, n + 1, 4));
        const up = round(randn(n, n + 2));
        const dh = round(randn(n, n + 3));
        const gT = gpu.upload(gate, [t, inter], dtype, 'gate');
        const uT = gpu.upload(up, [t, inter], dtype, 'up');
        expect(relError(await gpu.readF32(swiglu(gpu, gT, uT)), swigluRef(gate, up))).toBeLessThan(tol);
        const { dGate, dUp } = swigluBackward(gpu, gT, uT, gpu.upload(dh, [t, inter], dtype, 'dh'));
        const ref = swigluBackwardRef(gate, up, dh);
        expect(relError(await gpu.readF32(dGate), ref.dGate)).toBeLessThan(tol);
        expect(relError(await gpu.readF32(dUp), ref.dUp)).toBeLessThan(tol);
      });
    }
  }

  it('is finite for large negative and positive gates', async () => {
    const gpu = await testGpu();
    const gate = Float32Array.from([-200, -90, 90, 200]);
    const up = Float32Array.from([1.5, -2, 3, 0.5]);
    const out = await gpu.readF32(swiglu(gpu, gpu.upload(gate, [4], 'f32', 'gate'), gpu.upload(up, [4], 'f32', 'up')));
    expect(relError(out, swigluRef(gate, up))).toBeLessThan(1e-6);
  });

  it('reference backward matches finite differences', () => {
    const gate = randn(10, 1, 3);
    const up = randn(10, 2);
    const dh = randn(10, 3);
    const { dGate, dUp } = swigluBackwardRef(gate, up, dh);
    expect(relError(dGate, numericGrad((g) => dot(swigluRef(g, up), dh), gate))).toBeLessThan(1e-7);
    expect(relError(dUp, numericGrad((u) => dot(swigluRef(gate, u), dh), up))).toBeLessThan(1e-7);
  });
});
