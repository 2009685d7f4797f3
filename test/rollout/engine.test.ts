// The rollout engine on the gqa-tied fixture model (transformers' greedy continuation is the ground
// truth): batching, mixed adapters, seeded sampling, prefix sharing, preemption, aborts and page leaks.
import { beforeAll, describe, expect, it } from 'vitest';
import type { Gpu } from '../../src/gpu/gpu.ts';
import { lossAndGradients, nextTokenBatch } from '../../src/model/backward.ts';
import { AdapterSet, DEFAULT_LORA, LoraAdapter } from '../../src/model/lora.ts';
import { Qwen3Model } from '../../src/model/qwen3.ts';
import { AdamW } from '../../src/optim/adamw.ts';
import { nllLoss, releaseLossResult } from '../../src/rl/loss.ts';
import { type GenerateOptions, type GenerateResult, RolloutEngine } from '../../src/rollout/engine.ts';
import { testGpu } from '../helpers/gpu.ts';
import { randInts, randn } from '../helpers/random.ts';
import { greedyFixture } from '../helpers/tiny-qwen3.ts';

let gpu: Gpu;
let model: Qwen3Model;
let adapters: AdapterSet;
let greedyPrompt: number[];
let greedyIds: number[];

beforeAll(async () => {
  gpu = await testGpu();
  ({ model, prompt: greedyPrompt, greedy: greedyIds } = await greedyFixture(gpu));
  adapters = new AdapterSet();
  const small = { ...DEFAULT_LORA, rank: 4, alpha: 8 };
  adapters.add(LoraAdapter.create(gpu, 'solver', model.config, small, { seed: 1, randomB: 0.3 }));
  adapters.add(LoraAdapter.create(gpu, 'judge', model.config, small, { seed: 2, randomB: 0.3 }));
});

function engine(opts: ConstructorParameters<typeof RolloutEngine>[2] = {}): RolloutEngine {
  const e = new RolloutEngine(model, null, { adapters, kvBudgetBytes: 1 << 20, kvDtype: 'f32', ...opts });
  e.setRole('generator', 'solver');
  e.setRole('evaluator', 'judge');
  e.setRole('frozen', null);
  return e;
}

const greedy: GenerateOptions = { maxNewTokens: 12, temperature: 0, ignoreEos: true };

/** Teacher-forced ground truth without the engine (no cache, no bank: the adapter's own matmuls): each
 * generated token is the greedy argmax after the tokens before it, with log softmax as its logprob. */
async function expectGreedyOf(adapter: LoraAdapter | null, prompt: number[], r: { ids: number[]; logprobs: number[] }): Promise<void> {
  const all = [...prompt, ...r.ids];
  const logits = model.forward({ ids: Uint32Array.from(all), seqLens: [all.length] }, { adapter: adapter ?? undefined });
  const v = await gpu.readF32(logits);
  logits.release();
  const V = model.config.vocabSize;
  r.ids.forEach((id, i) => {
    const row = v.subarray((prompt.length - 1 + i) * V, (prompt.length + i) * V);
    let best = 0;
    for (let k = 1; k < V; k++) if (row[k]! > row[best]!) best = k;
    let sum = 0;
    for (let k = 0; k < V; k++) sum += Math.exp(row[k]! - row[best]!);
    expect(id).toBe(best);
    expect(Math.abs(r.logprobs[i]! - (row[id]! - row[best]! - Math.log(sum)))).toBeLessThan(1e-4);
  });
}

// Generous: SwiftShader compiles every pipeline on first use.
const SLOW = 600_000;

describe('RolloutEngine', () => {
  it('batched greedy equals one-at-a-time equals transformers', async () => {
    const e = engine();
    const alone = await e.generate('frozen', greedyPrompt, greedy);
    expect(alone.ids).toEqual(greedyIds);
    expect(alone.finishReason).toBe('length');
    const prompts = [greedyPrompt, Array.from(randInts(9, 1, 384)), Array.from(randInts(23, 2, 384))];
    const one: number[][] = [];
    for (const p of prompts) one.push((await e.generate('frozen', p, greedy)).ids);
    const batched = await Promise.all(prompts.map((p) => e.generate('frozen', p, greedy)));
    expect(batched.map((r) => r.ids)).toEqual(one);
    expect(batched[0]!.ids).toEqual(greedyIds);
    expect(e.stats.maxConcurrent).toBe(3);
    e.clearPrefixCache();
    expect(e.freePages).toBe(e.kv.numPages);
  }, SLOW);

  it('close frees the KV cache (every layer\'s K and V) and refuses later calls, naming why', async () => {
    const live = gpu.memory.liveBytes;
    const e = engine();
    const cacheBytes = [...e.kv.k, ...e.kv.v].reduce((a, t) => a + t.buffer.size, 0);
    expect(cacheBytes).toBeGreaterThan(0);
    expect(gpu.memory.liveBytes - live).toBeGreaterThanOrEqual(cacheBytes);
    await e.generate('frozen', greedyPrompt, { ...greedy, maxNewTokens: 2 });
    const before = gpu.memory.liveBytes;
    await e.close();
    expect(before - gpu.memory.liveBytes).toBeGreaterThanOrEqual(cacheBytes);
    expect(() => e.generate('frozen', greedyPrompt, greedy)).toThrow(/rollout engine is closed/);
    await e.close(); // a second close is a no-op, not a second release
  });

  it('a batch mixing adapters equals separate runs', async () => {
    const e = engine();
    const roles = ['generator', 'frozen', 'evaluator', 'generator', 'frozen'];
    const prompts = roles.map((_, i) => Array.from(randInts(5 + 3 * i, 10 + i, 384)));
    const separate: Awaited<ReturnType<RolloutEngine["generate"]>>[] = [];
    for (let i = 0; i < roles.length; i++) separate.push(await e.generate(roles[i]!, prompts[i]!, greedy));
    const mixed = await Promise.all(roles.map((r, i) => e.generate(r, prompts[i]!, greedy)));
    mixed.forEach((m, i) => {
      expect(m.ids).toEqual(separate[i]!.ids);
      m.logprobs.forEach((lp, j) => expect(Math.abs(lp - separate[i]!.logprobs[j]!)).toBeLessThan(1e-4));
    });
    // Adapters change the output: the generator's continuation differs from the base model's.
    const base = await e.generate('frozen', prompts[0]!, greedy);
    expect(base.ids).not.toEqual(separate[0]!.ids);
    expect(mixed[0]!.adapter).toBe('solver');
  }, SLOW);

  it('seeded sampling is reproducible and independent of the batch', async () => {
    const e = engine();
    const opts: GenerateOptions = { maxNewTokens: 10, temperature: 0.9, topP: 0.95, seed: 1234, ignoreEos: true };
    const alone = await e.generate('generator', greedyPrompt, opts);
    const again = await e.generate('generator', greedyPrompt, opts);
    expect(again.ids).toEqual(alone.ids);
    const crowd = await Promise.all([
      e.generate('evaluator', Array.from(randInts(11, 3, 384)), { ...opts, seed: 9 }),
      e.generate('generator', greedyPrompt, opts),
      e.generate('generator', greedyPrompt, { ...opts, stream: 1 }),
      e.generate('frozen', Array.from(randInts(30, 4, 384)), { ...opts, seed: 5 }),
    ]);
    expect(crowd[1]!.ids).toEqual(alone.ids);
    expect(crowd[2]!.ids).not.toEqual(alone.ids);
    alone.logprobs.forEach((lp) => expect(lp).toBeLessThan(0));
  }, SLOW);

  it('prefix sharing gives the same results as no sharing, and reuses pages', async () => {
    const shared = engine({ pageSize: 4 });
    const plain = engine({ pageSize: 4, prefixSharing: false });
    const prompt = Array.from(randInts(19, 7, 384));
    const opts: GenerateOptions = { maxNewTokens: 6, temperature: 0.8, seed: 3, ignoreEos: true };
    const n = 4;
    const a = await Promise.all(Array.from({ length: n }, (_, k) => shared.generate('generator', prompt, { ...opts, stream: k })));
    const b = await Promise.all(Array.from({ length: n }, (_, k) => plain.generate('generator', prompt, { ...opts, stream: k })));
    expect(a.map((r) => r.ids)).toEqual(b.map((r) => r.ids));
    // The 4 samples compute their 19-token prompt once: the first whole, the others only the 3 tokens past its 4
    // full pages (they wait one prefill for the cache); without sharing each computes all 19.
    expect(shared.stats.prefillTokens).toBe(19 + 3 * 3);
    expect(plain.stats.prefillTokens).toBe(4 * 19);
    // A later call with the same prompt finds its 4 full pages cached.
    const before = shared.freePages;
    const c = await shared.generate('generator', prompt, { ...opts, stream: 0 });
    expect(c.ids).toEqual(a[0]!.ids);
    expect(shared.freePages).toBe(before);
    // After the adapter changes, the cached pages no longer match (they were computed with old weights).
    shared.adapterUpdated('solver');
    await shared.generate('generator', prompt, { ...opts, stream: 0 });
    shared.clearPrefixCache();
    plain.clearPrefixCache();
    expect(shared.freePages).toBe(shared.kv.numPages);
    expect(plain.freePages).toBe(plain.kv.numPages);
  }, SLOW);

  it('prompts that start alike compute their common full pages once, with the same results as without sharing', async () => {
    // A role's system prompt and task (9 tokens: 2 full pages of 4) before three different candidates (5-7 tokens),
    // and a prompt of another adapter with the same start (K/V under other weights: nothing to share).
    const shared = engine({ pageSize: 4 });
    const plain = engine({ pageSize: 4, prefixSharing: false });
    const start = Array.from(randInts(9, 17, 384));
    const tails = [5, 6, 7].map((n, i) => Array.from(randInts(n, 30 + i, 384)));
    const opts: GenerateOptions = { maxNewTokens: 4, temperature: 0.8, seed: 9, ignoreEos: true };
    const calls = (e: RolloutEngine) => [...tails.map((t, k) => e.generate('evaluator', [...start, ...t], { ...opts, stream: k })), e.generate('generator', [...start, ...tails[0]!], opts)];
    const a = await Promise.all(calls(shared));
    const b = await Promise.all(calls(plain));
    expect(a.map((r) => r.ids)).toEqual(b.map((r) => r.ids));
    // The shared pages' K/V were computed in another prefill (measured: the same log-probs to the bit on SwiftShader)
    a.forEach((r, i) => r.logprobs.forEach((lp, j) => expect(Math.abs(lp - b[i]!.logprobs[j]!)).toBeLessThan(1e-5)));
    // The first evaluator call and the generator's compute all 14 tokens; the other two wait one prefill and compute
    // what follows the 2 common pages (the start's third page holds their own tokens): 15 - 8 and 16 - 8.
    expect(plain.stats.prefillTokens).toBe(14 + 15 + 16 + 14);
    expect(shared.stats.prefillTokens).toBe(14 + 7 + 8 + 14);
    expect(shared.stats.prefills).toBe(2);
    shared.clearPrefixCache();
    expect(shared.freePages).toBe(shared.kv.numPages);
  }, SLOW);

  it('preempts when the cache is full and recomputes to the same result', async () => {
    // 6 pages of 4 tokens: three sequences of 6 + 12 tokens cannot all fit at once.
    const roomy = engine({ pageSize: 4 });
    const tight = engine({ pageSize: 4, kvBudgetBytes: 6 * 4 * 2 * 2 * 2 * 24 * 4, prefixSharing: false });
    expect(tight.kv.numPages).toBe(6);
    const prompts = [0, 1, 2].map((i) => Array.from(randInts(6, 20 + i, 384)));
    const opts: GenerateOptions = { maxNewTokens: 12, temperature: 0.7, seed: 11, ignoreEos: true };
    const want = await Promise.all(prompts.map((p) => roomy.generate('generator', p, opts)));
    const got = await Promise.all(prompts.map((p) => tight.generate('generator', p, opts)));
    expect(got.map((r) => r.ids)).toEqual(want.map((r) => r.ids));
    expect(tight.stats.preemptions).toBeGreaterThan(0);
    expect(tight.freePages).toBe(6);
  }, SLOW);

  it('aborted and timed-out calls end early and free their pages', async () => {
    const e = engine({ prefixSharing: false });
    const ctrl = new AbortController();
    const long = { maxNewTokens: 400, temperature: 0, ignoreEos: true };
    const aborted = e.generate('generator', greedyPrompt, { ...long, signal: ctrl.signal });
    const timed = e.generate('frozen', greedyPrompt, { ...long, timeoutMs: 1 });
    const normal = e.generate('evaluator', greedyPrompt, { maxNewTokens: 5, temperature: 0 });
    setTimeout(() => ctrl.abort(), 5);
    const [a, t, n] = await Promise.all([aborted, timed, normal]);
    expect(a.finishReason).toBe('abort');
    expect(a.ids.length).toBeLessThan(400);
    expect(t.finishReason).toBe('timeout');
    expect(t.ids.length).toBeLessThan(400);
    expect(n.ids.length).toBeLessThanOrEqual(5);
    expect(e.freePages).toBe(e.kv.numPages);
    const pre = new AbortController();
    pre.abort();
    expect((await e.generate('frozen', greedyPrompt, { ...long, signal: pre.signal })).finishReason).toBe('abort');
  }, SLOW);

  it('one decode batch interleaving 3 adapters (mixed ranks, missing modules) and the base equals separate runs', async () => {
    const three = new AdapterSet();
    three.add(adapters.get('solver'));
    three.add(adapters.get('judge'));
    const critic = three.add(LoraAdapter.create(gpu, 'critic', model.config, { rank: 2, alpha: 4, targets: ['q_proj', 'v_proj', 'down_proj'] }, { seed: 3, randomB: 0.3 }));
    const e = new RolloutEngine(model, null, { adapters: three, kvBudgetBytes: 1 << 20, kvDtype: 'f32' });
    const adapterOf: Record<string, string | null> = { a: 'solver', b: 'judge', c: 'critic', base: null };
    for (const [role, a] of Object.entries(adapterOf)) e.setRole(role, a);
    const roles = ['c', 'base', 'a', 'b', 'c', 'a', 'base', 'b'];
    const prompts = roles.map((_, i) => Array.from(randInts(4 + 2 * i, 40 + i, 384)));
    const opts: GenerateOptions = { maxNewTokens: 6, temperature: 0, ignoreEos: true };
    const separate: GenerateResult[] = [];
    for (let i = 0; i < roles.length; i++) separate.push(await e.generate(roles[i]!, prompts[i]!, opts));
    const mixed = await Promise.all(roles.map((r, i) => e.generate(r, prompts[i]!, opts)));
    expect(e.stats.maxConcurrent).toBe(roles.length);
    for (let i = 0; i < roles.length; i++) {
      expect(mixed[i]!.adapter).toBe(adapterOf[roles[i]!]!);
      expect(mixed[i]!.ids).toEqual(separate[i]!.ids);
      mixed[i]!.logprobs.forEach((lp, j) => expect(Math.abs(lp - separate[i]!.logprobs[j]!)).toBeLessThan(1e-4));
      const name = adapterOf[roles[i]!]!;
      await expectGreedyOf(name === null ? null : three.get(name), prompts[i]!, mixed[i]!);
    }
    // The critic changes the output (it is not silently skipped).
    expect((await e.generate('base', prompts[0]!, opts)).ids).not.toEqual(mixed[0]!.ids);
    await e.close();
    three.delete('critic');
  }, SLOW);

  it('after an adapter changes and adapterUpdated, generation uses the new weights', async () => {
    const set = new AdapterSet();
    const critic = set.add(LoraAdapter.create(gpu, 'critic', model.config, { ...DEFAULT_LORA, rank: 4, alpha: 8 }, { seed: 5, randomB: 0.3 }));
    const e = new RolloutEngine(model, null, { adapters: set, kvBudgetBytes: 1 << 20, kvDtype: 'f32' });
    e.setRole('critic', 'critic');
    const prompt = Array.from(randInts(9, 50, 384));
    const opts: GenerateOptions = { maxNewTokens: 6, temperature: 0, ignoreEos: true };
    const before = await e.generate('critic', prompt, opts);
    await expectGreedyOf(critic, prompt, before);
    // An optimizer-like step: new B everywhere.
    critic.entries().forEach(({ pair }, i) => gpu.write(pair.B, randn(pair.B.size, 60 + i, 0.3)));
    e.adapterUpdated('critic');
    const after = await e.generate('critic', prompt, opts);
    expect(after.ids).not.toEqual(before.ids);
    await expectGreedyOf(critic, prompt, after);
    await e.close();
    set.release();
  }, SLOW);

  it('after an optimizer step generation uses the new weights, with no adapterUpdated call (bank and prefix cache)', async () => {
    const set = new AdapterSet();
    const critic = set.add(LoraAdapter.create(gpu, 'critic', model.config, { ...DEFAULT_LORA, rank: 4, alpha: 8 }, { seed: 7, randomB: 0.3 }));
    // pageSize 4: the 10-token prompt leaves 2 full pages in the prefix cache, computed with the old weights.
    const e = new RolloutEngine(model, null, { adapters: set, kvBudgetBytes: 1 << 20, kvDtype: 'f32', pageSize: 4 });
    e.setRole('critic', 'critic');
    const prompt = Array.from(randInts(10, 51, 384));
    const opts: GenerateOptions = { maxNewTokens: 6, temperature: 0, ignoreEos: true };
    const before = await e.generate('critic', prompt, opts);
    await expectGreedyOf(critic, prompt, before);
    // One SFT step toward random targets through the same per-row path the engine runs.
    const seq = [...prompt, ...Array.from(randInts(8, 52, 384))];
    const b = nextTokenBatch([seq]);
    const mask = gpu.upload(b.mask, [seq.length], 'f32', 'mask');
    const rows = set.rows(new Array(seq.length).fill('critic'));
    const { result, stats } = lossAndGradients(model, b, (st) => nllLoss(gpu, { logp: st.logp, mask, seqStarts: b.seqStarts }), { adapter: rows });
    rows.release();
    const opt = new AdamW(gpu, critic.parameters(), { lr: 0.05, weightDecay: 0 });
    expect((await opt.step()).skipped).toBe(false);
    releaseLossResult(result);
    for (const t of [stats.logp, stats.entropy, mask]) t.release();
    const after = await e.generate('critic', prompt, opts);
    expect(after.logprobs).not.toEqual(before.logprobs);
    await expectGreedyOf(critic, prompt, after);
    opt.release();
    await e.close();
    set.release();
  }, SLOW);

  it('rejects impossible requests with a clear error', async () => {
    const e = engine();
    expect(() => e.generate('frozen', [1, 2, 999], greedy)).toThrow(/token id 999/);
    expect(() => e.generate('frozen', greedyPrompt, { maxNewTokens: 600 })).toThrow(/max_position_embeddings/);
    expect(() => e.setRole('x', 'nope')).toThrow(/no adapter named nope/);
    expect(() => e.generate('frozen', 'hello')).toThrow(/tokenizer/);
  });
});
