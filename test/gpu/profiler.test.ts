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
