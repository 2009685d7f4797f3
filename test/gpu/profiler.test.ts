// Per-kernel GPU timing through timestamp queries: every profiled dispatch is counted under its label.
import { describe, expect, it } from 'vitest';
import { Gpu } from '../../src/gpu/gpu.ts';
import { add, scale } from '../../src/kernels/elementwise.ts';
import { formatProfile } from '../../src/cli/commands/bench.ts';
import { randn } from '../helpers/random.ts';

describe('profiler', () => {
  it('counts and times each kernel label across batches', async (ctx) => {
    const gpu = await Gpu.create({ profile: true });
    if (!gpu.profiler) return ctx.skip();
    const n = 50_000;
    const a = gpu.upload(randn(n, 1), [n], 'f32', 'a');
    const b = gpu.upload(randn(n, 2), [n], 'f32', 'b');
    for (let i = 0; i < 3; i++) add(gpu, a, b).release();
    await gpu.sync();
    const s = scale(gpu, a, 2);
    await gpu.readF32(s);
    const times = await gpu.profiler.results();
    const byLabel = new Map(times.map((t) => [t.label, t]));
    expect(byLabel.get('add')?.count).toBe(3);
    expect(byLabel.get('scale')?.count).toBe(1);
    for (const t of times) {
      expect(Number.isFinite(t.totalMs)).toBe(true);
      expect(t.totalMs).toBeGreaterThanOrEqual(0);
    }
    expect(formatProfile(times)).toMatch(/^kernel\s+calls\s+GPU ms\s+share\n(add|scale) /);
    gpu.profiler.reset();
    expect(await gpu.profiler.results()).toEqual([]);
    gpu.destroy();
  });

  it('is off unless asked for', async () => {
    const gpu = await Gpu.create();
    expect(gpu.profiler).toBeNull();
    gpu.destroy();
  });
});

describe('profiler over many passes', () => {
  it('times every pass of a batch longer than one query set (2,048 passes)', async (ctx) => {
    const gpu = await Gpu.create({ profile: true });
    if (!gpu.profiler) return ctx.skip();
    const n = 64;
    const a = gpu.upload(randn(n, 3), [n], 'f32', 'a');
    const passes = 4500;
    let x = a;
    for (let i = 0; i < passes; i++) {
      const y = scale(gpu, x, i % 2 ? 0.5 : 2);
      if (x !== a) x.release();
      x = y;
    }
    // One submit for all of them: the read flushes the batch.
    const got = await gpu.readF32(x);
    const want = await gpu.readF32(a);
    expect(Array.from(got)).toEqual(Array.from(want));
    const times = await gpu.profiler.results();
    expect(times.find((t) => t.label === 'scale')?.count).toBe(passes);
    expect(gpu.profiler.untimed()).toEqual([]);
    gpu.destroy();
  });

  it('says how many passes it left untimed past its limit', async (ctx) => {
    const gpu = await Gpu.create({ profile: { maxPassesPerBatch: 5 } });
    if (!gpu.profiler) return ctx.skip();
    const a = gpu.upload(randn(32, 4), [32], 'f32', 'a');
    const b = gpu.upload(randn(32, 5), [32], 'f32', 'b');
    for (let i = 0; i < 4; i++) add(gpu, a, b).release();
    for (let i = 0; i < 3; i++) scale(gpu, a, 3).release();
    await gpu.sync();
    const byLabel = new Map((await gpu.profiler.results()).map((t) => [t.label, t.count]));
    expect(byLabel.get('add')).toBe(4);
    expect(byLabel.get('scale')).toBe(1);
    expect(gpu.profiler.untimed()).toEqual([{ label: 'scale', count: 2 }]);
    expect(formatProfile(await gpu.profiler.results(), gpu.profiler.untimed())).toMatch(/not timed .*: 2 passes: scale×2/);
    // The limit is per batch: the next batch is timed again.
    scale(gpu, a, 3).release();
    await gpu.sync();
    expect(new Map((await gpu.profiler.results()).map((t) => [t.label, t.count])).get('scale')).toBe(2);
    gpu.profiler.reset();
    expect(gpu.profiler.untimed()).toEqual([]);
    gpu.destroy();
  });
});
