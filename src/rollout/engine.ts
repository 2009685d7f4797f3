// The rollout engine: workflows call generate(role, prompt, options) as ordinary async calls; one
// scheduling loop gathers every pending call (all roles, episodes and rollouts of a step) and runs
// them together — a batched prefill for newly admitted sequences, then batched decode steps that
// sequences join and leave as they start and finish (continuous batching). K/V live in a paged cache
// under a memory budget; full prompt pages are shared between sequences with the same prefix; when
// pages run out the newest sequence is preempted and later recomputed. Each row of a batch runs its
// role's own LoRA adapter (or none) through the adapter set's bank (AdapterSet.rows: one lora_rows kernel
// per linear, rows in any order, the trainer's path too; adapters whose version moved re-sync before each
// forward), and draws tokens on the GPU from its own seeded stream.
import type { Gpu, PendingRead } from '../gpu/gpu.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { type PackedSample, readPackedSampleLater, type SampleValues, type SamplingRow, sampleTokensPacked } from '../kernels/sample.ts';
import { KvCache, type PagedSeq, releaseBatch } from '../model/kv-cache.ts';
import type { LinearAdapter } from '../model/adapter.ts';
import type { AdapterSet, RowsTrainableAdapter } from '../model/lora.ts';
import type { Qwen3Model } from '../model/qwen3.ts';
import type { ChatMessage, Qwen3Tokenizer } from '../model/tokenizer.ts';
import { PrefixCache } from './prefix-cache.ts';

export class RolloutError extends Error {
  override name = 'RolloutError';
}

export interface GenerateOptions {
  /** Default 256. Exact when no stop condition is met first. */
  maxNewTokens?: number;
  /** 0 = greedy. Default 1. */
  temperature?: number;
  /** Default 1 (no nucleus truncation). */
  topP?: number;
  /** Same seed and stream → same tokens, whatever else shares the batch. Default 0. */
  seed?: number;
  /** Independent stream under one seed (the k-th of n samples). Default 0. */
  stream?: number;
  /** Stop strings: generation ends when the text contains one (the text is cut before it). */
  stop?: string[];
  /** Keep going past EOS / <|im_end|>. */
  ignoreEos?: boolean;
  signal?: AbortSignal;
  /** Ends the call (finishReason 'timeout') after this long, queueing included. */
  timeoutMs?: number;
}

export type FinishReason = 'stop' | 'length' | 'abort' | 'timeout';

export interface GenerateResult {
  role: string;
  adapter: string | null;
  promptIds: number[];
  /** New tokens only. */
  ids: number[];
  text: string;
  /** log softmax(logits / T) of each new token (GRPO's logp_old); greedy rows use T = 1. */
  logprobs: number[];
  /** Entropy of softmax(logits / T) at each new token (T = 1 for greedy rows). */
  entropies: number[];
  finishReason: FinishReason;
  /** Which stop token or string ended it, when finishReason is 'stop'. */
  stoppedBy?: string;
  timing: { queuedMs: number; totalMs: number; preemptions: number };
}

export interface EngineOptions {
  /** The role → adapter bindings are made with setRole; adapters come from this set. */
  adapters?: AdapterSet;
  /** Bytes of K/V cache over all layers (default 256 MiB). */
  kvBudgetBytes?: number;
  pageSize?: number;
  /** Most sequences decoding at once (default 256). */
  maxBatchSeqs?: number;
  /** Most prompt tokens in one prefill (default 4096). */
  maxPrefillTokens?: number;
  prefixSharing?: boolean;
  /** Token ids that end a sequence (default: the model's eos ids plus <|im_end|> and <|endoftext|>). */
  stopIds?: number[];
  kvDtype?: 'f16' | 'f32';
  /** Decode steps recorded while the GPU runs the current one (true/default: 2, or 4 with deferred reads; false = 0). */
  runAhead?: boolean | number;
  /** Start each step's read only when the engine first waits for it, all unstarted ones together (default:
   * Gpu.mapWaitsForQueue, i.e. under Deno). */
  deferReads?: boolean;
}

/** A recorded step whose draws are being read back. */
interface InFlightStep {
  seqs: Sequence[];
  sample: PackedSample;
  /** Started at once, or under Deno (Gpu.mapWaitsForQueue) when the engine first waits for it. */
  read: PendingRead;
  values: Promise<SampleValues>;
}

interface Sequence {
  role: string;
  adapter: string | null;
  promptIds: number[];
  ids: number[];
  logprobs: number[];
  entropies: number[];
  opts: Required<Pick<GenerateOptions, 'maxNewTokens' | 'temperature' | 'topP' | 'seed' | 'stream'>> & GenerateOptions;
  pages: number[];
  /** Tokens of promptIds + ids whose K/V are in the cache. */
  cached: number;
  /** Pages that came from the prefix cache at admission, the prefix key of the last of them, and the keys of the
   * prompt's full pages after them (which its prefill adds to the cache). */
  sharedPages: number;
  prefixKey: string;
  newPageKeys: string[];
  queuedAt: number;
  admittedAt: number;
  preemptions: number;
  done: (r: GenerateResult) => void;
  fail: (e: Error) => void;
  ended: FinishReason | null;
  stoppedBy?: string;
  timer?: ReturnType<typeof setTimeout>;
}

const now = () => (typeof performance !== 'undefined' ? performance.now() : Date.now());

export class RolloutEngine {
  readonly kv: KvCache;
  private readonly prefix: PrefixCache | null;
  private readonly roles = new Map<string, string | null>();
  private readonly waiting: Sequence[] = [];
  private readonly running: Sequence[] = [];
  private pumping: Promise<void> | null = null;
  private closed = false;
  /** The last step's draws, kept on the GPU: the next decode step takes its ids from them when it runs the
   * same sequences in the same order. */
  private lastSample: { seqs: Sequence[]; sample: PackedSample } | null = null;
  /** Calls made and calls finished so far: the scheduling loop yields to the event loop only when these
   * moved (a finished call's caller may be about to make new ones that should join the next step). */
  private arrivals = 0;
  private finished = 0;
  private readonly stopIds: Set<number>;
  private readonly opts: Required<Omit<EngineOptions, 'adapters' | 'stopIds' | 'kvBudgetBytes' | 'kvDtype' | 'runAhead' | 'deferReads'>>;
  /** prefillTokens: tokens computed by prefills (cached prompt pages not counted). */
  readonly stats = { prefills: 0, prefillTokens: 0, decodeSteps: 0, tokens: 0, preemptions: 0, maxConcurrent: 0 };

  constructor(
    readonly model: Qwen3Model,
    readonly tokenizer: Qwen3Tokenizer | null,
    private readonly options: EngineOptions = {},
  ) {
    const c = model.config;
    const pageSize = options.pageSize ?? 16;
    const dtype = options.kvDtype ?? 'f16';
    const numPages = KvCache.pagesForBudget(options.kvBudgetBytes ?? 256 * 2 ** 20, { layers: c.numLayers, nKv: c.numKvHeads, headDim: c.headDim, pageSize, dtype: model.gpu.f16 ? dtype : 'f32' });
    if (numPages < 2) throw new RolloutError(`RolloutEngine: a KV budget of ${options.kvBudgetBytes} bytes holds fewer than 2 pages`);
    this.kv = new KvCache(model.gpu, { layers: c.numLayers, nKv: c.numKvHeads, headDim: c.headDim, pageSize, numPages, dtype });
    this.prefix = options.prefixSharing === false ? null : new PrefixCache(this.kv);
    this.opts = { pageSize, maxBatchSeqs: options.maxBatchSeqs ?? 256, maxPrefillTokens: options.maxPrefillTokens ?? 4096, prefixSharing: options.prefixSharing ?? true };
    const ids = options.stopIds ?? [...c.eosTokenIds, ...(tokenizer ? [tokenizer.imEndId, tokenizer.endOfTextId] : [])];
    this.stopIds = new Set(ids);
  }

  get gpu(): Gpu {
    return this.model.gpu;
  }

  private get deferReads(): boolean {
    return this.options.deferReads ?? this.gpu.mapWaitsForQueue;
  }

  /** Binds a role to an adapter of the set (null: the base model, e.g. a frozen role). */
  setRole(role: string, adapter: string | null): void {
    if (adapter !== null && !this.options.adapters?.has(adapter)) throw new RolloutError(`setRole(${role}): no adapter named ${adapter}`);
    this.roles.set(role, adapter);
  }

  /** Call after writing an adapter's weights by hand (an optimizer step marks them itself): bumps its
   * version, so the bank re-copies it and cached prefixes computed with the old weights stop matching. */
  adapterUpdated(name: string): void {
    const set = this.options.adapters;
    if (!set?.has(name)) throw new RolloutError(`adapterUpdated: no adapter named ${name}`);
    set.get(name).markUpdated();
  }

  /** Pages neither a sequence nor the prefix cache holds. */
  get freePages(): number {
    return this.kv.freePages;
  }

  clearPrefixCache(): void {
    this.prefix?.clear();
  }

  generate(role: string, prompt: readonly ChatMessage[] | readonly number[] | string, options: GenerateOptions = {}): Promise<GenerateResult> {
    if (this.closed) throw new RolloutError(`generate(${role}): the rollout engine is closed (its KV cache is freed)`);
    const promptIds = this.promptIds(prompt);
    const maxNewTokens = options.maxNewTokens ?? 256;
    if (!Number.isInteger(maxNewTokens) || maxNewTokens < 1) throw new RolloutError(`generate(${role}): maxNewTokens must be a positive integer, got ${maxNewTokens}`);
    const maxPos = this.model.config.maxPositionEmbeddings;
    if (promptIds.length + maxNewTokens > maxPos) {
      throw new RolloutError(`generate(${role}): ${promptIds.length} prompt + ${maxNewTokens} new tokens exceed max_position_embeddings ${maxPos}`);
    }
    const vocab = this.model.config.vocabSize;
    const bad = promptIds.find((t) => !Number.isInteger(t) || t < 0 || t >= vocab);
    if (bad !== undefined) throw new RolloutError(`generate(${role}): token id ${bad} outside the vocabulary [0, ${vocab})`);
    const pagesNeeded = Math.ceil((promptIds.length + maxNewTokens) / this.kv.pageSize);
    if (pagesNeeded > this.kv.numPages) {
      throw new RolloutError(`generate(${role}): needs ${pagesNeeded} KV pages, the cache has ${this.kv.numPages}: raise kvBudgetBytes`);
    }
    const adapter = this.roles.has(role) ? this.roles.get(role)! : null;
    return new Promise<GenerateResult>((done, fail) => {
      const seq: Sequence = {
        role,
        adapter,
        promptIds,
        ids: [],
        logprobs: [],
        entropies: [],
        opts: { ...options, maxNewTokens, temperature: options.temperature ?? 1, topP: options.topP ?? 1, seed: options.seed ?? 0, stream: options.stream ?? 0 },
        pages: [],
        cached: 0,
        sharedPages: 0,
        prefixKey: '',
        newPageKeys: [],
        queuedAt: now(),
        admittedAt: 0,
        preemptions: 0,
        done,
        fail,
        ended: null,
      };
      if (options.signal?.aborted) return this.finishNow(seq, 'abort');
      options.signal?.addEventListener('abort', () => this.endEarly(seq, 'abort'), { once: true });
      if (options.timeoutMs !== undefined) seq.timer = setTimeout(() => this.endEarly(seq, 'timeout'), options.timeoutMs);
      this.waiting.push(seq);
      this.arrivals++;
      this.pump();
    });
  }

  private promptIds(prompt: readonly ChatMessage[] | readonly number[] | string): number[] {
    if (typeof prompt === 'string' || (prompt.length && typeof prompt[0] === 'object')) {
      if (!this.tokenizer) throw new RolloutError('generate: text prompts need a tokenizer');
      return typeof prompt === 'string' ? this.tokenizer.encode(prompt) : this.tokenizer.encodeChat(prompt as ChatMessage[]);
    }
    if (!prompt.length) throw new RolloutError('generate: empty prompt');
    return [...(prompt as number[])];
  }

  // ---- scheduling ----

  private pump(): void {
    if (this.pumping) return;
    this.pumping = (async () => {
      let seenArrivals = -1;
      let seenFinished = -1;
      try {
        while (this.waiting.length || this.running.length) {
          if (this.arrivals !== seenArrivals || this.finished !== seenFinished) {
            // Let calls made in the same tick (and the follow-ups of calls that just finished) join this step.
            await new Promise((r) => setTimeout(r, 0));
            seenArrivals = this.arrivals;
            seenFinished = this.finished;
          } else {
            // Nothing new since the last step: no timer (at least 1 ms under Node), only a microtask turn.
            await Promise.resolve();
          }
          this.reapEnded();
          if (!this.waiting.length && !this.running.length) break;
          this.gpu.checkLost('a rollout step');
          const admitted = this.admit();
          if (admitted.length) await this.prefill(admitted);
          else if (this.running.length) await this.decodeStep();
          else if (this.waiting.length) {
            throw new RolloutError(`rollout engine: ${this.waiting.length} calls wait but none can be admitted (${this.kv.freePages} of ${this.kv.numPages} KV pages free): raise kvBudgetBytes`);
          }
        }
        this.dropLastSample();
      } catch (e) {
        this.dropLastSample();
        const err = e instanceof Error ? e : new Error(String(e));
        for (const s of [...this.waiting.splice(0), ...this.running.splice(0)]) {
          this.releasePages(s);
          s.fail(err);
        }
      } finally {
        this.pumping = null;
      }
    })();
  }

  private root(adapter: string | null): string {
    // The version changes with the weights: K/V cached under older weights never match.
    return adapter === null ? 'base' : `${adapter}@${this.options.adapters!.get(adapter).version}`;
  }

  /** Moves waiting sequences into the batch while pages, batch slots and the prefill budget allow. A sequence whose
   * next uncached full page (same adapter, same tokens before and in it) this prefill computes for another waits for
   * the next prefill, whose prefix cache then holds it: a group of n samples computes its prompt once, not n times,
   * and prompts that start alike (a role's system prompt and task before different candidates) their common pages. */
  private admit(): Sequence[] {
    const admitted: Sequence[] = [];
    let prefillTokens = 0;
    const computing = new Set<string>();  // prefix-cache keys of the prompt pages this prefill adds
    const P = this.kv.pageSize;
    for (let w = 0; w < this.waiting.length && this.running.length + admitted.length < this.opts.maxBatchSeqs; ) {
      const s = this.waiting[w]!;
      const tokens = [...s.promptIds, ...s.ids];
      const root = this.root(s.adapter);
      const match = this.prefix?.match(root, tokens) ?? { pages: [], key: '' };
      const cached = match.pages.length * P;
      const newTokens = tokens.length - cached;
      // match() leaves the last token uncached: the pages it could take are those before it.
      const matchable = Math.floor((tokens.length - 1) / P);
      if (this.prefix && computing.size && matchable > match.pages.length && computing.has(this.prefix.pageKeys(tokens, match.pages.length, match.pages.length + 1, match.key)[0]!)) {
        this.kv.release(match.pages);
        w++;
        continue;
      }
      // Room for the prompt and one page to grow into, so admission does not thrash.
      const need = Math.ceil((tokens.length + 1) / P) - match.pages.length;
      if (admitted.length && prefillTokens + newTokens > this.opts.maxPrefillTokens) {
        this.kv.release(match.pages);
        break;
      }
      this.prefix?.evict(need);
      if (this.kv.freePages < need) {
        this.kv.release(match.pages);
        break;
      }
      this.waiting.splice(w, 1);
      // The pages recordPrefill will insert (the prompt's full pages past the matched ones)
      s.newPageKeys = this.prefix?.pageKeys(s.promptIds, match.pages.length, Infinity, match.key) ?? [];
      for (const key of s.newPageKeys) computing.add(key);
      s.pages = [...match.pages, ...this.kv.allocate(need)];
      s.cached = cached;
      s.admittedAt ||= now();
      s.sharedPages = match.pages.length;
      s.prefixKey = match.key;
      prefillTokens += newTokens;
      admitted.push(s);
    }
    return admitted;
  }

  /** The per-row adapter of one forward (row counts per sequence), or undefined when every row is the base model. */
  private rowsAdapter(seqs: Sequence[], rowsOf: (s: Sequence) => number): RowsTrainableAdapter | undefined {
    const set = this.options.adapters;
    if (!set || seqs.every((s) => s.adapter === null)) return undefined;
    return set.rows(seqs.flatMap((s) => new Array<string | null>(rowsOf(s)).fill(s.adapter)));
  }

  /** Runs one forward with its rows' adapters, releasing the row indices once it is recorded. */
  private withRows(seqs: Sequence[], rowsOf: (s: Sequence) => number, forward: (adapter: LinearAdapter | undefined) => Tensor): Tensor {
    const adapter = this.rowsAdapter(seqs, rowsOf);
    try {
      return forward(adapter);
    } finally {
      adapter?.release();
    }
  }

  private dropLastSample(): void {
    this.lastSample?.sample.packed.release();
    this.lastSample = null;
  }

  /** Prefills the admitted sequences, then whoever else can be admitted meanwhile, one forward each. Each next
   * prefill is recorded before the draws of the one before are read, so the GPU does not wait while the host
   * records it (with per-row adapters and shapes that change from one prefill to the next, tens of ms). */
  private async prefill(first: Sequence[]): Promise<void> {
    this.dropLastSample();
    const inflight: InFlightStep[] = [this.recordPrefill(first)];
    await this.readInOrder(inflight, () => {
      const more = this.admit();
      if (more.length) inflight.push(this.recordPrefill(more));
    });
  }

  /** Reads the steps in flight in order, `recordMore` recording further ones behind them before each read;
   * the last step's draws stay on the GPU as lastSample (the next step may take them as its ids). */
  private async readInOrder(inflight: InFlightStep[], recordMore: () => void): Promise<void> {
    try {
      for (;;) {
        const cur = inflight[0]!;
        // Deferred reads start together: the first map waits for the GPU to finish them all, and the steps
        // recordMore then submits run while the maps resolve.
        if (!cur.read.started) for (const f of inflight) f.read.start();
        recordMore();
        await this.advance(cur);
        inflight.shift();
        if (!inflight.length) {
          this.lastSample = { seqs: cur.seqs, sample: cur.sample };
          return;
        }
        cur.sample.packed.release();
      }
    } catch (e) {
      for (const f of inflight) {
        f.read.start();
        await f.values.catch(() => {});
        f.sample.packed.release();
      }
      throw e;
    }
  }

  /** Records one prefill forward of the admitted sequences and their first draws, and starts reading those. */
  private recordPrefill(admitted: Sequence[]): InFlightStep {
    const tokensOf = (s: Sequence) => [...s.promptIds, ...s.ids];
    const seqs: PagedSeq[] = admitted.map((s) => ({ pages: s.pages, cachedLen: s.cached, newTokens: tokensOf(s).length - s.cached }));
    const ids = Uint32Array.from(admitted.flatMap((s) => tokensOf(s).slice(s.cached)));
    const batch = this.kv.buildBatch(seqs);
    const logits = this.withRows(admitted, (s) => tokensOf(s).length - s.cached, (adapter) =>
      this.model.forward({ ids, seqLens: seqs.map((q) => q.newTokens), cache: { kv: this.kv, batch } }, { adapter, lastOnly: true }),
    );
    releaseBatch(batch);
    for (const s of admitted) {
      s.cached = s.promptIds.length + s.ids.length;
      // Only prompt pages are shared: generated tokens differ between rollouts.
      this.prefix?.insert(s.promptIds, s.pages, s.sharedPages, s.prefixKey, s.newPageKeys);
      s.newPageKeys = [];
    }
    this.stats.prefills++;
    this.stats.prefillTokens += ids.length;
    this.running.push(...admitted);
    return this.recordSample(admitted, logits, 0);
  }

  private async decodeStep(): Promise<void> {
    // Every running sequence needs room for one more token; preempt the newest when pages run out.
    for (const s of [...this.running]) {
      if (!this.running.includes(s)) continue;
      if (s.cached + 1 <= s.pages.length * this.kv.pageSize) continue;
      this.prefix?.evict(1);
      while (this.kv.freePages < 1 && this.running.length > 1) this.preempt(this.running[this.running.length - 1]!);
      if (!this.running.includes(s)) continue;
      if (this.kv.freePages < 1) throw new RolloutError(`KV cache exhausted: ${this.kv.numPages} pages cannot hold one sequence of ${s.cached + 1} tokens`);
      s.pages.push(...this.kv.allocate(1));
    }
    if (!this.running.length) return;
    const seqs = [...this.running];
    // The last draws are each sequence's newest id when the batch is the same sequences in the same order
    // (nothing joined, left or was preempted): then they stay on the GPU.
    const prev = this.lastSample;
    this.lastSample = null;
    const same = prev !== null && prev.seqs.length === seqs.length && prev.seqs.every((s, i) => s === seqs[i]);
    const ids = same ? prev.sample.tokens : Uint32Array.from(seqs.map((s) => s.ids[s.ids.length - 1]!));
    const inflight: InFlightStep[] = [];
    try {
      inflight.push(this.recordDecode(seqs, ids, 0));
    } finally {
      prev?.sample.packed.release();
    }
    // While the GPU runs a step, the next ones are recorded from its draws on the GPU and submitted behind
    // it, so the GPU does not wait for the host to read the draws and record again. A step recorded ahead is
    // exactly what the next step would have been; rows of sequences that stop in between are dropped.
    const depth = this.runAheadDepth();
    await this.readInOrder(inflight, () => {
      while (this.unreadAhead(inflight) < depth && this.canRunAhead(seqs, inflight.length)) {
        inflight.push(this.recordDecode(seqs, inflight[inflight.length - 1]!.sample.tokens, inflight.length));
      }
    });
  }

  /** Decode steps recorded ahead of the one being read: EngineOptions.runAhead, else 2 (a 1-sequence rollout on an
   * H100 under Dawn: 456-493 tok/s with 2 or 3 against 344-381 with 1, six runs each, bench/RESULTS.md 2026-12-06),
   * or with deferred reads (Deno) 4 whose reads have not started: they run on the GPU while the started maps take
   * their ~11 ms to resolve (a 10 ms sleep in wgpu's poll loop), and the next map's wait for the GPU covers them all. */
  private runAheadDepth(): number {
    const r = this.options.runAhead;
    if (r === false) return 0;
    if (typeof r === 'number') return Math.max(0, Math.floor(r));
    return this.deferReads ? 4 : 2;
  }

  /** Steps in flight that count against the run-ahead depth: all but the one being read, or under Deno those
   * whose reads have not started (the ones that keep the GPU busy while the started maps resolve). */
  private unreadAhead(inflight: InFlightStep[]): number {
    if (!this.deferReads) return inflight.length - 1;
    let n = 0;
    for (const f of inflight) if (!f.read.started) n++;
    return n;
  }

  /** Whether a step may be recorded behind the `unread` ones in flight: the same sequences, none ended or
   * reaching maxNewTokens before it, no call waiting to join, and a page for each that needs one (no preemption). */
  private canRunAhead(seqs: Sequence[], unread: number): boolean {
    if (this.waiting.length || seqs.length !== this.running.length) return false;
    for (const s of seqs) {
      if (s.ended || s.ids.length + unread >= s.opts.maxNewTokens) return false;
    }
    if (!seqs.every((s, i) => this.running[i] === s)) return false;
    const grow = seqs.filter((s) => s.cached + 1 > s.pages.length * this.kv.pageSize);
    if (grow.length) {
      this.prefix?.evict(grow.length);
      if (this.kv.freePages < grow.length) return false;
      for (const s of grow) s.pages.push(...this.kv.allocate(1));
    }
    return true;
  }

  /** Records one decode forward of `seqs` (each with room for one more token) and its draws, and starts
   * reading them back. `ahead`: draws of these sequences recorded but not read yet (the step index offset). */
  private recordDecode(seqs: Sequence[], ids: Uint32Array | Tensor, ahead: number): InFlightStep {
    const batch = this.kv.buildBatch(seqs.map((s) => ({ pages: s.pages, cachedLen: s.cached, newTokens: 1 })));
    let logits: Tensor;
    try {
      logits = this.withRows(seqs, () => 1, (adapter) => this.model.decode(ids, { kv: this.kv, batch }, { adapter }));
    } finally {
      releaseBatch(batch);
    }
    for (const s of seqs) s.cached++;
    this.stats.decodeSteps++;
    this.stats.maxConcurrent = Math.max(this.stats.maxConcurrent, seqs.length);
    return this.recordSample(seqs, logits, ahead);
  }

  private preempt(s: Sequence): void {
    this.running.splice(this.running.indexOf(s), 1);
    this.releasePages(s);
    s.cached = 0;
    s.preemptions++;
    this.stats.preemptions++;
    this.waiting.unshift(s);
  }

  /** Records the draws of `logits` and starts reading them back: the forward and the draws go in one submit,
   * and the ids, log-probs and entropies come back in one map. */
  private recordSample(seqs: Sequence[], logits: Tensor, ahead: number): InFlightStep {
    const rows: SamplingRow[] = seqs.map((s) => ({ temperature: s.opts.temperature, topP: s.opts.topP, seed: s.opts.seed, stream: s.opts.stream, step: s.ids.length + ahead }));
    const sample = sampleTokensPacked(this.gpu, logits, rows);
    logits.release();
    const { read, values } = readPackedSampleLater(this.gpu, sample);
    if (!this.deferReads) read.start();
    return { seqs, sample, read, values };
  }

  /** Waits for a step's draws and appends them to its sequences that are still going. The caller owns
   * step.sample (its ids may feed the next forward). */
  private async advance(step: InFlightStep): Promise<void> {
    const { seqs } = step;
    const { tokens, logprobs, entropies } = await step.values;
    seqs.forEach((s, i) => {
      if (s.ended) return;
      const t = tokens[i]!;
      s.ids.push(t);
      s.logprobs.push(logprobs[i]!);
      s.entropies.push(entropies[i]!);
      this.stats.tokens++;
      this.checkStop(s, t);
    });
    this.reapEnded();
  }

  private checkStop(s: Sequence, token: number): void {
    if (!s.opts.ignoreEos && this.stopIds.has(token)) {
      s.ended = 'stop';
      s.stoppedBy = this.tokenizer?.decode([token]) ?? String(token);
    } else if (s.opts.stop?.length && this.tokenizer) {
      const text = this.tokenizer.decode(s.ids, { skipSpecialTokens: true });
      const hit = s.opts.stop.find((x) => text.includes(x));
      if (hit !== undefined) {
        s.ended = 'stop';
        s.stoppedBy = hit;
      }
    }
    if (!s.ended && s.ids.length >= s.opts.maxNewTokens) s.ended = 'length';
  }

  /** Resolves and frees every sequence that ended (finished, aborted or timed out). */
  private reapEnded(): void {
    for (const list of [this.running, this.waiting]) {
      for (let i = list.length - 1; i >= 0; i--) {
        const s = list[i]!;
        if (!s.ended) continue;
        list.splice(i, 1);
        this.finishNow(s, s.ended);
      }
    }
  }

  /** Marks a sequence for ending; a queued one ends at once, a running one at the next step boundary. */
  private endEarly(s: Sequence, reason: FinishReason): void {
    if (s.ended) return;
    s.ended = reason;
    const w = this.waiting.indexOf(s);
    if (w >= 0) {
      this.waiting.splice(w, 1);
      this.finishNow(s, reason);
    }
  }

  private releasePages(s: Sequence): void {
    if (s.pages.length) this.kv.release(s.pages);
    s.pages = [];
  }

  private finishNow(s: Sequence, reason: FinishReason): void {
    this.finished++;
    if (s.timer) clearTimeout(s.timer);
    this.releasePages(s);
    let text = this.tokenizer?.decode(s.ids, { skipSpecialTokens: true }) ?? '';
    if (reason === 'stop' && s.stoppedBy && s.opts.stop?.includes(s.stoppedBy)) text = text.slice(0, text.indexOf(s.stoppedBy));
    const t = now();
    s.done({
      role: s.role,
      adapter: s.adapter,
      promptIds: s.promptIds,
      ids: s.ids,
      text,
      logprobs: s.logprobs,
      entropies: s.entropies,
      finishReason: reason,
      stoppedBy: reason === 'stop' ? s.stoppedBy : undefined,
      timing: { queuedMs: (s.admittedAt || t) - s.queuedAt, totalMs: t - s.queuedAt, preemptions: s.preemptions },
    });
  }

  /** Ends every call (finishReason 'abort') and frees the cache; generate() refuses calls after it. Before
   * 2026-12-07 the KV cache stayed allocated, and a process that made engines one after another ran out of GPU
   * memory (Deno's 1-sequence rollout rows, seven engines of 17 GB on an H100). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const s of [...this.waiting, ...this.running]) this.endEarly(s, 'abort');
    await this.pumping;
    this.reapEnded();
    this.dropLastSample();
    this.prefix?.clear();
    this.kv.destroy();
  }
}
