import { describe, expect, it } from 'vitest';
import { roundF16 } from '../../src/gpu/dtype.ts';
import type { Gpu } from '../../src/gpu/gpu.ts';
import type { TrainableParam } from '../../src/model/lora.ts';
import { AdamW, OptimizerError } from '../../src/optim/adamw.ts';
import { testGpu } from '../helpers/gpu.ts';
import { randn, relError } from '../helpers/random.ts';
import { adamwRefInit, adamwRefStep, gradNormRef } from '../ref/adamw.ts';

// 70,001 elements need more than 256 partial sums' worth of workgroups per tensor.
const SIZES = [1, 1000, 70_001];
const HYPER = { lr: 1e-2, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0.01 };

function makeParams(gpu: Gpu, seed: number, dtype: 'f32' | 'f16' = 'f32') {
  const init = SIZES.map((n, i) => (dtype === 'f16' ? roundF16(randn(n, seed + i)) : randn(n, seed + i)));
  const params: TrainableParam[] = init.map((p, i) => ({
    name: `w${i}`,
    param: gpu.upload(p, [p.length], dtype, `w${i}`),
    grad: gpu.upload(new Float32Array(p.length), [p.length], 'f32', `w${i}.grad`),
  }));
  return { init, params };
}

// grad scale 1 -> norm ≈ √71002 ≈ 266: clipped to 1; scale 1e-3 -> norm 0.27: not clipped.
const gradsFor = (step: number, scale: number) => SIZES.map((n, i) => randn(n, 1000 * step + i, scale));

describe('AdamW vs torch-semantics reference', () => {
  it('three steps with clipping on and off: params, moments, norms; grads zeroed after the step', async () => {
    const gpu = await testGpu();
    const { init, params } = makeParams(gpu, 1);
    const opt = new AdamW(gpu, params, { ...HYPER, maxGradNorm: 1.0 });
    const ref = adamwRefInit(init);
    for (const [step, scale] of [[1, 1], [2, 1e-3], [3, 0.5]] as const) {
      const grads = gradsFor(step, scale);
      grads.forEach((g, i) => gpu.write(params[i]!.grad, g));
      const lr = HYPER.lr * (1 - 0.1 * step);
      const res = await opt.step(lr);
      const norm = adamwRefStep(ref, grads, { ...HYPER, lr, maxNorm: 1.0 });
      expect(res.skipped).toBe(false);
      expect(res.step).toBe(step);
      expect(Math.abs(res.gradNorm - norm) / norm).toBeLessThan(1e-5);
      expect(res.clipCoef).toBeCloseTo(Math.min(1, 1 / (norm + 1e-6)), 6);
      for (let i = 0; i < SIZES.length; i++) {
        const p = await gpu.readF32(params[i]!.param);
        // compare the updates (p − p0): they are ~lr, far below |p|
        const delta = p.map((v, j) => v - init[i]![j]!);
        const refDelta = ref.params[i]!.map((v, j) => v - init[i]![j]!);
        expect(relError(delta, refDelta)).toBeLessThan(2e-4);
        expect(Array.from(await gpu.readF32(params[i]!.grad)).every((g) => g === 0)).toBe(true);
      }
    }
    expect(opt.stepCount).toBe(3);
    expect(opt.skipped).toBe(0);
    opt.release();
  });

  it('without clipping, the norm is reported and the update uses raw gradients', async () => {
    const gpu = await testGpu();
    const { init, params } = makeParams(gpu, 2);
    const opt = new AdamW(gpu, params, { ...HYPER, maxGradNorm: null });
    const ref = adamwRefInit(init);
    const grads = gradsFor(9, 1);
    grads.forEach((g, i) => gpu.write(params[i]!.grad, g));
    const res = await opt.step();
    adamwRefStep(ref, grads, { ...HYPER, maxNorm: null });
    expect(res.clipCoef).toBe(1);
    expect(res.gradNorm).toBeGreaterThan(100);
    const p = await gpu.readF32(params[2]!.param);
    expect(relError(p.map((v, j) => v - init[2]![j]!), ref.params[2]!.map((v, j) => v - init[2]![j]!))).toBeLessThan(2e-4);
    opt.release();
  });

  it('grad norm is deterministic and matches the f64 sum of squares', async () => {
    const gpu = await testGpu();
    const { params } = makeParams(gpu, 3);
    const grads = gradsFor(4, 0.7);
    grads.forEach((g, i) => gpu.write(params[i]!.grad, g));
    const opt = new AdamW(gpu, params);
    const a = await opt.gradNorm();
    const b = await opt.gradNorm();
    expect(a).toBe(b);
    expect(Math.abs(a - gradNormRef(grads)) / gradNormRef(grads)).toBeLessThan(1e-5);
    opt.release();
  });

  it('a non-finite norm skips the step, counts it, zeroes the grads, leaves params', async () => {
    const gpu = await testGpu();
    const { init, params } = makeParams(gpu, 4);
    const opt = new AdamW(gpu, params);
    const grads = gradsFor(5, 1);
    grads[1]![17] = NaN;
    grads.forEach((g, i) => gpu.write(params[i]!.grad, g));
    const res = await opt.step();
    expect(res.skipped).toBe(true);
    expect(Number.isNaN(res.gradNorm)).toBe(true);
    expect(opt.skipped).toBe(1);
    expect(opt.stepCount).toBe(0);
    expect(Array.from(await gpu.readF32(params[1]!.param))).toEqual(Array.from(init[1]!));
    expect(Array.from(await gpu.readF32(params[1]!.grad)).every((g) => g === 0)).toBe(true);
    gpu.write(params[0]!.grad, new Float32Array([Infinity]));
    expect((await opt.step()).skipped).toBe(true);
    expect(opt.skipped).toBe(2);
    opt.release();
  });

  it('f16 parameters (full-parameter mode on f16 weights): f32 math, f16 storage', async (ctx) => {
    const gpu = await testGpu();
    if (!gpu.f16) return ctx.skip();
    const { init, params } = makeParams(gpu, 6, 'f16');
    const opt = new AdamW(gpu, params, { ...HYPER, lr: 0.05 });
    const ref = adamwRefInit(init);
    const grads = gradsFor(6, 1);
    grads.forEach((g, i) => gpu.write(params[i]!.grad, g));
    await opt.step(0.05);
    adamwRefStep(ref, grads, { ...HYPER, lr: 0.05, maxNorm: 1 });
    const p = await gpu.readF32(params[2]!.param);
    expect(relError(p, roundF16(ref.params[2]!))).toBeLessThan(2e-3);
    opt.release();
  });

  it('state save -> load resumes bit-exactly', async () => {
    const gpu = await testGpu();
    const a = makeParams(gpu, 7);
    const b = makeParams(gpu, 7);
    const optA = new AdamW(gpu, a.params, HYPER, 'role-a');
    for (const step of [1, 2]) {
      gradsFor(step, 0.3).forEach((g, i) => gpu.write(a.params[i]!.grad, g));
      await optA.step();
    }
    const state = await optA.saveState();
    // b gets a's parameters and optimizer state, then both take the same third step
    for (let i = 0; i < SIZES.length; i++) gpu.write(b.params[i]!.param, await gpu.readF32(a.params[i]!.param));
    const optB = new AdamW(gpu, b.params, HYPER, 'role-a');
    optB.loadState(state);
    expect(optB.stepCount).toBe(2);
    for (const p of [a.params, b.params]) gradsFor(3, 0.3).forEach((g, i) => gpu.write(p[i]!.grad, g));
    await optA.step();
    await optB.step();
    for (let i = 0; i < SIZES.length; i++) {
      expect(Array.from(await gpu.readF32(b.params[i]!.param))).toEqual(Array.from(await gpu.readF32(a.params[i]!.param)));
    }
    // a state of other parameters is refused, naming the tensor
    const other = new AdamW(gpu, [{ name: 'x', param: gpu.upload(new Float32Array(3).fill(1), [3], 'f32', 'x'), grad: gpu.tensor([3], 'f32', 'gx') }]);
    expect(() => other.loadState(state)).toThrow(/w0\.exp_avg/);
    expect(() => other.loadState(new Uint8Array(4))).toThrow();
    for (const o of [optA, optB, other]) o.release();
  });

  it('refuses bad settings', async () => {
    const gpu = await testGpu();
    const { params } = makeParams(gpu, 8);
    expect(() => new AdamW(gpu, params, { beta1: 1 })).toThrow(OptimizerError);
    expect(() => new AdamW(gpu, [])).toThrow(/no parameters/);
    expect(() => new AdamW(gpu, [params[0]!, params[0]!])).toThrow(/twice/);
  });
});
