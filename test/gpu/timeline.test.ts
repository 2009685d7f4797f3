// The timeline: two timestamps a batch, GPU busy time and the gaps where it waited for the host, per phase.
import { describe, expect, it } from 'vitest';
import { formatTimeline } from '../../src/cli/commands/bench.ts';
import { Gpu } from '../../src/gpu/gpu.ts';
import { add, scale } from '../../src/kernels/elementwise.ts';
import { randn } from '../helpers/random.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('timeline', () => {
  it('counts batches per phase and charges a host pause to the batch that waited for it', async (ctx) => {
    const gpu = await Gpu.create({ timeline: true });
    if (!gpu.timeline) return ctx.skip();
    const n = 40_000;
    const a = gpu.upload(randn(n, 1), [n], 'f32', 'a');
    const b = gpu.upload(randn(n, 2), [n], 'f32', 'b');
    const want = await gpu.readF32(a);
    gpu.timeline.reset();
    gpu.phase = 'first';
    for (let i = 0; i < 3; i++) {
      add(gpu, a, b).release();
      await gpu.sync();
    }
    await sleep(80);
    gpu.phase = 'second';
    const s = scale(gpu, a, 2);
    const got = await gpu.readF32(s);
    gpu.phase = '';
    expect(got[7]).toBeCloseTo(2 * want[7]!, 5);
    await gpu.readF32(b);
    const byPhase = new Map((await gpu.timeline.results()).map((p) => [p.phase, p]));
    expect(byPhase.get('first')?.batches).toBe(3);
    // The scale and its read went in one batch; the read of `b` in another, outside any phase.
    expect(byPhase.get('second')?.batches).toBe(1);
    expect(byPhase.get('other')?.batches).toBe(1);
    for (const p of byPhase.values()) {
      expect(Number.isFinite(p.busyMs) && p.busyMs >= 0).toBe(true);
      expect(Number.isFinite(p.idleMs) && p.idleMs >= 0).toBe(true);
    }
    // The GPU had nothing to do during the 80 ms pause: a gap at least most of that long precedes `second`.
    const second = byPhase.get('second')!;
    expect(second.idleMs).toBeGreaterThan(60);
    expect(second.longestGaps[0]!.before).toBe('scale');
    expect(byPhase.get('first')!.longestGaps.length).toBe(2);
    expect(formatTimeline([...byPhase.values()])).toMatch(/^phase\s+batches\s+busy ms\s+idle ms\s+longest gaps.*\nfirst\s+3\s/);
    gpu.destroy();
  });

  it('forgets earlier batches on reset, also those still being read, and skips a discarded batch', async (ctx) => {
    const gpu = await Gpu.create({ timeline: true });
    if (!gpu.timeline) return ctx.skip();
    const a = gpu.upload(randn(256, 3), [256], 'f32', 'a');
    scale(gpu, a, 3).release();
    gpu.flush();
    gpu.timeline.reset();
    scale(gpu, a, 0.5).release();
    expect(gpu.discardBatch()).toBe(1);
    gpu.phase = 'after';
    add(gpu, a, a).release();
    await gpu.sync();
    const phases = await gpu.timeline.results();
    expect(phases.map((p) => [p.phase, p.batches])).toEqual([['after', 1]]);
    gpu.destroy();
  });

  it('is off unless asked for', async () => {
    const gpu = await Gpu.create();
    expect(gpu.timeline).toBeNull();
    gpu.destroy();
  });
});
