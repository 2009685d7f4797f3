// The engine's decode loop on the host side: one submit and one map per step, the sampled ids kept on
// the GPU while the batch does not change, bind groups reused, no timer per step, prefills in a row recorded
// ahead; and the tokens stay
// those of transformers' greedy continuation (the gqa-tied fixture) and of one-at-a-time runs.
import { beforeAll, describe, expect, it } from 'vitest';
import type { Gpu } from '../../src/gpu/gpu.ts';
import { Qwen3Model } from '../../src/model/qwen3.ts';
import { RolloutEngine } from '../../src/rollout/engine.ts';
import { testGpu } from '../helpers/gpu.ts';
import { greedyFixture } from '../helpers/tiny-qwen3.ts';

let gpu: Gpu;
let model: Qwen3Model;
let greedyPrompt: number[];
let greedyIds: number[];

beforeAll(async () => {
  gpu = await testGpu();
  ({ model, prompt: greedyPrompt, greedy: greedyIds } = await greedyFixture(gpu));
});

/** Counts submits, reads back, id uploads and timers while `f` runs. */
async function counting<T>(f: () => Promise<T>): Promise<{ result: T; submits: number; reads: number; idUploads: number; timers: number }> {
  const c = { submits: 0, reads: 0, idUploads: 0, timers: 0 };
  const queue = gpu.device.queue;
  const submit = queue.submit;
  const readBytesLater = gpu.readBytesLater;
  const upload = gpu.upload;
  const setTimer = globalThis.setTimeout;
  queue.submit = function (this: GPUQueue, ...a: Parameters<GPUQueue['submit']>) {
    c.submits++;
    return submit.apply(this, a);
  };
  gpu.readBytesLater = function (this: Gpu, ...a: Parameters<Gpu['readBytesLater']>) {
    c.reads++;
    return readBytesLater.apply(this, a);
  };
  gpu.upload = function (this: Gpu, ...a: Parameters<Gpu['upload']>) {
    if (a[3] === 'embedding.ids') c.idUploads++;
    return upload.apply(this, a);
  };
  globalThis.setTimeout = ((...a: Parameters<typeof setTimeout>) => {
    c.timers++;
    return setTimer(...a);
  }) as typeof setTimeout;
  try {
    const result = await f();
    return { result, ...c };
  } finally {
    queue.submit = submit;
    gpu.readBytesLater = readBytesLater;
    gpu.upload = upload;
    globalThis.setTimeout = setTimer;
  }
}

/** Logs, in order, while `f` runs: each submit, each read's map starting, each read's bytes arriving. */
async function logging<T>(f: () => Promise<T>): Promise<{ result: T; events: string[] }> {
  const events: string[] = [];
  const queue = gpu.device.queue;
  const submit = queue.submit;
  const readBytesLater = gpu.readBytesLater;
  queue.submit = function (this: GPUQueue, ...a: Parameters<GPUQueue['submit']>) {
    events.push('submit');
    return submit.apply(this, a);
  };
  gpu.readBytesLater = function (this: Gpu, ...a: Parameters<Gpu['readBytesLater']>) {
    const r = readBytesLater.apply(this, a);
    const start = r.start;
    r.start = () => (r.started || events.push('start'), start.call(r));
    r.bytes.then(() => events.push('read'));
    return r;
  };
  try {
    return { result: await f(), events };
  } finally {
    queue.submit = submit;
    gpu.readBytesLater = readBytesLater;
  }
}

describe('decode loop', () => {
  it.each([false, true])('one submit and one read a step, ids stay on the GPU, no timer a step; tokens equal transformers (reads deferred: %s)', async (deferReads) => {
    const e = new RolloutEngine(model, null, { kvBudgetBytes: 1 << 20, kvDtype: 'f32', deferReads });
    const n = greedyIds.length;
    const opts = { maxNewTokens: n, temperature: 0, ignoreEos: true };
    // Warm-up (pipelines, bind groups), then the counted run.
    await Promise.all([e.generate('a', greedyPrompt, opts), e.generate('b', greedyPrompt, opts)]);
    const before = { ...e.stats };
    const hits = gpu.bindGroupStats.hits;
    const misses = gpu.bindGroupStats.misses;
    const c = await counting(() => Promise.all([e.generate('a', greedyPrompt, opts), e.generate('b', greedyPrompt, { ...opts, temperature: 0.8, seed: 5 })]));
    const prefills = e.stats.prefills - before.prefills;
    const steps = e.stats.decodeSteps - before.decodeSteps;
    expect(prefills).toBe(1);
    expect(steps).toBe(n - 1);
    expect(c.result[0].ids).toEqual(greedyIds);
    expect(c.result[1].ids).toHaveLength(n);
    // Each forward (prefill or decode step) with its draws is one submit and one map of one buffer.
    expect(c.reads).toBe(prefills + steps);
    expect(c.submits).toBe(prefills + steps);
    // Only the prefill uploads ids (its tokens, and the rows of each sequence's last token): every decode step
    // runs the same two sequences, so it takes the last draws on the GPU.
    expect(c.idUploads).toBe(2);
    // A timer only where calls arrived or finished (to let new calls join), not once a step.
    expect(c.timers).toBeLessThanOrEqual(3);
    // The second run's steps reuse the first run's bind groups.
    expect(gpu.bindGroupStats.hits - hits).toBeGreaterThan(10 * (gpu.bindGroupStats.misses - misses));
    await e.close();
  });

  it('sequences joining and leaving the batch get the same tokens as one at a time', async () => {
    const e = new RolloutEngine(model, null, { kvBudgetBytes: 1 << 20, kvDtype: 'f32' });
    const prompts = [greedyPrompt, greedyPrompt.slice(0, 5), [...greedyPrompt.slice(2), 7, 11]];
    const lens = [3, 9, 6];
    const optsOf = (i: number) => ({ maxNewTokens: lens[i]!, temperature: i === 1 ? 0 : 0.9, seed: 40 + i, ignoreEos: true });
    const alone: number[][] = [];
    for (let i = 0; i < prompts.length; i++) alone.push((await e.generate('r', prompts[i]!, optsOf(i))).ids);
    // The third call arrives while the first two decode: it joins with a prefill, the first leaves after 3 tokens.
    const first = [e.generate('r', prompts[0]!, optsOf(0)), e.generate('r', prompts[1]!, optsOf(1))];
    await new Promise((r) => setTimeout(r, 0));
    const third = e.generate('r', prompts[2]!, optsOf(2));
    const together = await Promise.all([...first, third]);
    together.forEach((r, i) => expect(r.ids).toEqual(alone[i]!));
    await e.close();
  });

  it('prefills that follow each other are recorded before the one before is read, with the tokens of one at a time', async () => {
    // One prompt a prefill (the budget holds one), no shared prefixes: three prefills in a row.
    const e = new RolloutEngine(model, null, { kvBudgetBytes: 1 << 20, kvDtype: 'f32', maxPrefillTokens: greedyPrompt.length, prefixSharing: false });
    const opts = (i: number) => ({ maxNewTokens: 4, temperature: i === 0 ? 0 : 0.8, seed: 9 + i, ignoreEos: true });
    const alone: number[][] = [];
    for (let i = 0; i < 3; i++) alone.push((await e.generate('r', greedyPrompt, opts(i))).ids);
    const before = e.stats.prefills;
    const { result: together, events } = await logging(() => Promise.all([0, 1, 2].map((i) => e.generate('r', greedyPrompt, opts(i)))));
    together.forEach((r, i) => expect(r.ids).toEqual(alone[i]!));
    expect(e.stats.prefills - before).toBe(3);
    // The second prefill went to the GPU before the first one's draws came back.
    expect(events.filter((x) => x !== 'start').slice(0, 3)).toEqual(['submit', 'submit', 'read']);
    await e.close();
  });

  it.each([
    [1, false],
    [3, false],
    [1, true],
    [3, true],
  ])('%i steps recorded ahead (reads deferred: %s) give what step-by-step decoding gives, also when sequences stop on a token mid-batch', async (depth, deferReads) => {
    const stop = greedyIds[4]!;
    const ahead = new RolloutEngine(model, null, { kvBudgetBytes: 1 << 20, kvDtype: 'f32', stopIds: [stop], pageSize: 4, runAhead: depth, deferReads });
    const stepwise = new RolloutEngine(model, null, { kvBudgetBytes: 1 << 20, kvDtype: 'f32', stopIds: [stop], pageSize: 4, runAhead: false, deferReads: false });
    const calls = (e: RolloutEngine) =>
      Promise.all([
        e.generate('a', greedyPrompt, { maxNewTokens: 10, temperature: 0 }),
        e.generate('b', greedyPrompt, { maxNewTokens: 10, temperature: 1, seed: 3 }),
        e.generate('c', greedyPrompt.slice(1), { maxNewTokens: 7, temperature: 0.7, seed: 4, stream: 2 }),
        e.generate('d', greedyPrompt, { maxNewTokens: 10, temperature: 0, ignoreEos: true }),
      ]);
    const [x, y] = [await calls(ahead), await calls(stepwise)];
    expect(x[0]!.ids).toEqual(greedyIds.slice(0, greedyIds.indexOf(stop) + 1));
    expect(x[0]!.finishReason).toBe('stop');
    expect(x[3]!.ids).toEqual(greedyIds.slice(0, 10));
    x.forEach((r, i) => {
      expect(r.ids).toEqual(y[i]!.ids);
      expect(r.logprobs).toEqual(y[i]!.logprobs);
      expect(r.entropies).toEqual(y[i]!.entropies);
      expect(r.finishReason).toBe(y[i]!.finishReason);
    });
    // Every page comes back (pages grown for steps recorded ahead included).
    ahead.clearPrefixCache();
    expect(ahead.freePages).toBe(ahead.kv.numPages);
    await ahead.close();
    await stepwise.close();
  });

  it('deferred reads start together, and the steps recorded meanwhile keep the GPU busy while they resolve', async () => {
    const depth = 3;
    const e = new RolloutEngine(model, null, { kvBudgetBytes: 1 << 20, kvDtype: 'f32', runAhead: depth, deferReads: true });
    const { result, events: all } = await logging(() => e.generate('a', greedyPrompt, { maxNewTokens: 12, temperature: 0, ignoreEos: true }));
    const events = all.filter((x) => x !== 'read');
    expect(result.ids).toEqual(greedyIds.slice(0, 12));
    // Prefill, then the first step alone; from then on the maps of `depth` steps start together, and `depth`
    // more steps are submitted before the engine waits.
    const runs = events.join(' ').match(/(submit ?)+|(start ?)+/g)!.map((r) => `${r.trim().split(' ')[0]}x${r.trim().split(' ').length}`);
    expect(runs.slice(0, 6)).toEqual(['submitx1', 'startx1', 'submitx1', 'startx1', `submitx${depth}`, `startx${depth}`]);
    expect(events.filter((x) => x === 'start')).toHaveLength(12);
    await e.close();
  });
});
