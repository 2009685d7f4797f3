// Wall-clock timing of GPU work: the median, over timed rounds, of the seconds per call, each round
// `calls` back-to-back calls and then a wait for the GPU. One untimed round first compiles the
// pipelines and wakes the GPU.
import type { Gpu } from '../src/gpu/gpu.ts';

export async function medianSecondsPerCall(gpu: Gpu, run: () => void, opts: { calls: number; repeats: number }): Promise<number> {
  const round = async (): Promise<void> => {
    for (let i = 0; i < opts.calls; i++) run();
    await gpu.sync();
  };
  await round();
  const times: number[] = [];
  for (let r = 0; r < opts.repeats; r++) {
    const t0 = performance.now();
    await round();
    times.push((performance.now() - t0) / 1000 / opts.calls);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}
