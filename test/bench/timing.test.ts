// bench/timing.ts: rounds grow by 4x until they last minRoundMs, never past maxCalls; without it they stay put;
// the warm-up repeats rounds until warmMs has passed; with a timeline, each timed round's GPU busy time too.
import { describe, expect, it } from 'vitest';
import { timePerCall, WARM_MAX_ROUNDS } from '../../bench/timing.ts';
import { add } from '../../src/kernels/elementwise.ts';
import { testGpu } from '../helpers/gpu.ts';
import { randn } from '../helpers/random.ts';

describe('timePerCall', () => {
  it('keeps the given calls, or grows them to maxCalls when rounds are too short, running a real kernel', async () => {
    const gpu = await testGpu();
    const a = gpu.upload(randn(64, 1), [64], 'f32', 'a');
    const b = gpu.upload(randn(64, 2), [64], 'f32', 'b');
    const out = gpu.tensor([64], 'f32', 'out');
    let runs = 0;
    const run = () => {
      runs++;
      add(gpu, a, b, out);
    };
    const plain = await timePerCall(gpu, run, { calls: 10, repeats: 2, warmMs: 0 });
    expect(plain.calls).toBe(10);
    expect(runs).toBe(10 + 2 * 10);
    expect(plain.secondsPerCall).toBeGreaterThan(0);
    runs = 0;
    // no round lasts 1e9 ms: 10 -> 40 (the cap), after one calibration round of 10
    const grown = await timePerCall(gpu, run, { calls: 10, repeats: 2, minRoundMs: 1e9, maxCalls: 40, warmMs: 0 });
    expect(grown.calls).toBe(40);
    expect(runs).toBe(10 + 10 + 2 * 40);
    runs = 0;
    // every round lasts at least 0 ms: no growth
    expect((await timePerCall(gpu, run, { calls: 10, repeats: 2, minRoundMs: 0, maxCalls: 40, warmMs: 0 })).calls).toBe(10);
    expect(runs).toBe(10 + 10 + 2 * 10);
    runs = 0;
    // the warm-up repeats rounds until warmMs has passed: 1e9 ms never does, so it stops at WARM_MAX_ROUNDS
    await timePerCall(gpu, run, { calls: 10, repeats: 2, warmMs: 1e9 });
    expect(runs).toBe(WARM_MAX_ROUNDS * 10 + 2 * 10);
    // no timeline: no GPU busy time
    expect(plain.gpuSecondsPerCall).toBeUndefined();
    for (const t of [a, b, out]) t.release();
  });

  it('takes each timed round\'s GPU busy time per call where the Gpu keeps a timeline', async (ctx) => {
    const gpu = await testGpu({ timeline: true });
    if (!gpu.timeline) return ctx.skip('no timestamp-query');
    const a = gpu.upload(randn(4096, 1), [4096], 'f32', 'a');
    const out = gpu.tensor([4096], 'f32', 'out');
    const t = await timePerCall(gpu, () => add(gpu, a, a, out), { calls: 20, repeats: 3, warmMs: 0 });
    expect(Number.isFinite(t.gpuSecondsPerCall)).toBe(true);
    expect(t.gpuSecondsPerCall).toBeGreaterThan(0);
    for (const x of [a, out]) x.release();
  });
});
