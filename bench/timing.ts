// Wall-clock timing of GPU work: the median, over timed rounds, of the seconds per call, each round
// `calls` back-to-back calls and then a wait for the GPU. Untimed rounds first compile the pipelines and wake
// the GPU. With `minRoundMs` the calls per round are first multiplied by 4 until a round
// lasts that long (at most `maxCalls`): a wait for the GPU costs about 11 ms under Deno/wgpu (its mapAsync polls
// every 10 ms) against tens of microseconds under Dawn, so rounds of a few small kernels would time the wait.
// Where the Gpu keeps a timeline (--timeline), each timed round's GPU busy time is taken too: kernels of a few
// microseconds record slower than they run, so their wall clock times the host (and its noise), not the kernel.
import type { Gpu } from '../src/gpu/gpu.ts';

const WARM_MS = 400;
export const WARM_MAX_ROUNDS = 256;

export interface TimingOptions {
  calls: number;
  repeats: number;
  /** Grow the calls per round until a round takes at least this long. */
  minRoundMs?: number;
  /** The most calls per round minRoundMs may grow to (default 4096). */
  maxCalls?: number;
  /** Untimed warm-up for at least this long (default 400 ms; at least one round, WARM_MAX_ROUNDS at most). */
  warmMs?: number;
}

export interface Timing {
  secondsPerCall: number;
  /** The median round's GPU busy time per call (its submits' spans, without the host's gaps between them), where
   *  the Gpu keeps a timeline. */
  gpuSecondsPerCall?: number;
  /** Calls per timed round. */
  calls: number;
}

export async function timePerCall(gpu: Gpu, run: () => void, opts: TimingOptions): Promise<Timing> {
  const round = async (calls: number): Promise<number> => {
    const t0 = performance.now();
    for (let i = 0; i < calls; i++) run();
    await gpu.sync();
    return performance.now() - t0;
  };
  // Untimed rounds for at least warmMs (one at least, WARM_MAX_ROUNDS at most): an idle H200 sits at 345 MHz and
  // takes a while to clock up, so a single warm-up round of a few milliseconds left the first row timed after a
  // setup up to 4x slow (2026-12-02). An H100 takes about 300 ms of steady work from idle to 1980 MHz (2.9 ms, then
  // 1.6 ms from 90 ms on, 0.7 ms from 290 ms on for the same pass: bench/tc-probe.mjs ramp, 2026-12-06), and it
  // drops back within a second of light work (a row's compile and check), so 150 ms timed rows at half speed.
  const warmMs = opts.warmMs ?? WARM_MS;
  let warm = 0;
  let warmRounds = 0;
  do {
    warm += await round(opts.calls);
  } while (warm < warmMs && ++warmRounds < WARM_MAX_ROUNDS);
  let calls = opts.calls;
  const maxCalls = Math.max(opts.calls, opts.maxCalls ?? 4096);
  if (opts.minRoundMs !== undefined) {
    while (calls < maxCalls && (await round(calls)) < opts.minRoundMs) calls = Math.min(maxCalls, calls * 4);
  }
  const times: number[] = [];
  const busy: number[] = [];
  const timeline = gpu.timeline;
  // The timeline's busy time so far: a round's is the difference (no reset, so --timeline still sums the whole run).
  const busyMs = async () => (timeline ? (await timeline.results()).reduce((ms, p) => ms + p.busyMs, 0) : 0);
  for (let r = 0; r < opts.repeats; r++) {
    const before = await busyMs();
    times.push((await round(calls)) / 1000 / calls);
    if (timeline) busy.push(((await busyMs()) - before) / 1000 / calls);
  }
  const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  return { secondsPerCall: median(times), calls, ...(timeline ? { gpuSecondsPerCall: median(busy) } : {}) };
}

export async function medianSecondsPerCall(gpu: Gpu, run: () => void, opts: TimingOptions): Promise<number> {
  return (await timePerCall(gpu, run, opts)).secondsPerCall;
}
