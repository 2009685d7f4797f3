// The Qwen3 forward on tiny random models against the CPU reference: packed batches, the paged KV cache
// (chunked prefill + decode equal to a full recompute), the LoRA hook, f16 weights, bad input.
import { describe, expect, it } from 'vitest';
import type { Gpu } from '../../src/gpu/gpu.ts';
import type { Tensor } from '../../src/gpu/tensor.ts';
import { matmul } from '../../src/kernels/matmul.ts';
import type { LinearAdapter, LinearModule } from '../../src/model/adapter.ts';
import type { Qwen3Config } from '../../src/model/config.ts';
import { KvCache, releaseBatch } from '../../src/model/kv-cache.ts';
import { Qwen3Model, releaseLayerSaved, type LayerSaved } from '../../src/model/qwen3.ts';
import { RolloutEngine } from '../../src/rollout/engine.ts';
import { testGpu } from '../helpers/gpu.ts';
import { randInts, randn, relError } from '../helpers/random.ts';
import { randomWeightMap, tinyConfig, uploadWeights } from '../helpers/tiny-qwen3.ts';
import { qwen3Ref, type WeightMap } from '../ref/qwen3.ts';
import { rmsnormRef } from '../ref/rmsnorm.ts';
import { swigluRef } from '../ref/swiglu.ts';

const CONFIGS: [string, Qwen3Config][] = [
  ['gqa tied hd12', tinyConfig()],
  ['mha untied hd16', tinyConfig({ hiddenSize: 24, numHeads: 3, numKvHeads: 3, headDim: 16, intermediateSize: 40, tieWordEmbeddings: false, ropeTheta: 1e6 })],
];

/** Rows [r0, r1) of a [*, V] array. */
const rowsOf = (a: ArrayLike<number>, V: number, r0: number, r1: number) => Array.prototype.slice.call(a, r0 * V, r1 * V) as number[];

async function build(gpu: Gpu, c: Qwen3Config, seed: number, dtype: 'f32' | 'f16' = 'f32'): Promise<{ model: Qwen3Model; w: WeightMap }> {
  const w = randomWeightMap(c, seed);
  return { model: new Qwen3Model(gpu, c, uploadWeights(gpu, c, w, dtype)), w };
}

describe('Qwen3Model', () => {
  for (const [name, c] of CONFIGS) {
    it(`${name}: packed forward of 3 sequences (5, 1, 13 tokens) equals the CPU reference`, async () => {
      const gpu = await testGpu();
      const { model, w } = await build(gpu, c, 1);
      const seqLens = [5, 1, 13];
      const ids = randInts(19, 2, c.vocabSize);
      const logits = model.forward({ ids, seqLens });
      expect(logits.shape).toEqual([19, c.vocabSize]);
      const got = await gpu.readF32(logits);
      expect(relError(got, qwen3Ref(c, w, ids, seqLens))).toBeLessThan(1e-4);
      // lastOnly: the last row of each sequence; with hiddenOnly: [rows, hidden].
      const last = await gpu.readF32(model.forward({ ids, seqLens }, { lastOnly: true }));
      const want = [4, 5, 18].flatMap((r) => rowsOf(got, c.vocabSize, r, r + 1));
      expect(relError(last, want)).toBeLessThan(1e-5);
      if (!c.tieWordEmbeddings) expect(model.forward({ ids, seqLens }, { lastOnly: true, hiddenOnly: true }).shape).toEqual([3, c.hiddenSize]);
    });

    it(`${name}: chunked prefill + decode through the KV cache equals a full recompute`, async () => {
      const gpu = await testGpu();
      const { model } = await build(gpu, c, 3);
      // Two sequences: A 7 then 5 tokens; B 20 (crosses a page) then 2; then one decode step of both.
      const A = randInts(13, 4, c.vocabSize);
      const B = randInts(23, 5, c.vocabSize);
      const full = await gpu.readF32(model.forward({ ids: Uint32Array.from([...A, ...B]), seqLens: [13, 23] }));
      const V = c.vocabSize;
      const kv = new KvCache(gpu, { layers: c.numLayers, nKv: c.numKvHeads, headDim: c.headDim, pageSize: 16, numPages: 4, dtype: 'f32' });
      const pages = [kv.allocate(1), kv.allocate(2)];
      const steps: [number, number][] = [[7, 20], [5, 2]];
      const done = [0, 0];
      for (const step of steps) {
        const active = [0, 1].filter((s) => step[s]! > 0);
        const batch = kv.buildBatch(active.map((s) => ({ pages: pages[s]!, cachedLen: done[s]!, newTokens: step[s]! })));
        const ids = Uint32Array.from(active.flatMap((s) => [...(s ? B : A).subarray(done[s]!, done[s]! + step[s]!)]));
        const got = await gpu.readF32(model.forward({ ids, seqLens: active.map((s) => step[s]!), cache: { kv, batch } }));
        let row = 0;
        for (const s of active) {
          const r0 = (s ? 13 : 0) + done[s]!;
          const n = step[s]!;
          expect(relError(got.subarray(row * V, (row + n) * V), rowsOf(full, V, r0, r0 + n))).toBeLessThan(1e-4);
          row += n;
          done[s]! += n;
        }
        releaseBatch(batch);
      }
      // decode() is the 1-token-per-sequence case.
      const batch = kv.buildBatch([{ pages: pages[0]!, cachedLen: 12, newTokens: 1 }, { pages: pages[1]!, cachedLen: 22, newTokens: 1 }]);
      const got = await gpu.readF32(model.decode(Uint32Array.from([A[12]!, B[22]!]), { kv, batch }));
      expect(relError(got, [...rowsOf(full, V, 12, 13), ...rowsOf(full, V, 35, 36)])).toBeLessThan(1e-4);
      kv.destroy();
    });
  }

  /** Greedy continuations through the rollout engine (paged cache, GPU argmax); stopIds end a sequence. */
  async function greedy(model: Qwen3Model, prompts: number[][], maxNewTokens: number, stopIds: number[] = []): Promise<number[][]> {
    const engine = new RolloutEngine(model, null, { kvBudgetBytes: 1 << 20, kvDtype: 'f32', stopIds });
    const out = await Promise.all(prompts.map((p) => engine.generate('test', p, { maxNewTokens, temperature: 0 })));
    await engine.close();
    return out.map((r) => r.ids);
  }
  const argmax = (row: number[]) => row.indexOf(Math.max(...row));

  it('greedy generation through the cache equals greedy over full recomputes', async () => {
    const gpu = await testGpu();
    const c = CONFIGS[0]![1];
    const { model } = await build(gpu, c, 7);
    const prompts = [Array.from(randInts(4, 8, c.vocabSize)), Array.from(randInts(9, 9, c.vocabSize))];
    const out = await greedy(model, prompts, 4);
    // Teacher-forced full forward of prompt + continuation: each new token is the argmax of the row before it.
    const seqs = prompts.map((p, s) => [...p, ...out[s]!]);
    const logits = await gpu.readF32(model.forward({ ids: Uint32Array.from(seqs.flat()), seqLens: seqs.map((q) => q.length) }));
    let start = 0;
    for (let s = 0; s < 2; s++) {
      expect(out[s]).toHaveLength(4);
      const want = out[s]!.map((_, k) => argmax(rowsOf(logits, c.vocabSize, start + prompts[s]!.length - 1 + k, start + prompts[s]!.length + k)));
      expect(out[s]).toEqual(want);
      start += seqs[s]!.length;
    }
    // A stop id ends its sequence early (and is kept) while the other runs on.
    const stop = out[0]![1]!;
    const upTo = (seq: number[]) => (seq.includes(stop) ? seq.slice(0, seq.indexOf(stop) + 1) : seq);
    const stopped = await greedy(model, prompts, 4, [stop]);
    expect(stopped).toEqual([upTo(out[0]!), upTo(out[1]!)]);
  });

  it('layerForward with save keeps every intermediate a backward needs', async () => {
    const gpu = await testGpu();
    const c = CONFIGS[0]![1];
    const { model, w } = await build(gpu, c, 17);
    const ids = randInts(19, 18, c.vocabSize);
    const ctx = model.context({ ids, seqLens: [8, 11] });
    const x = model.embed(ids);
    const save: Partial<LayerSaved> = {};
    const y = model.layerForward(0, x, ctx, save);
    const plain = model.layerForward(0, x, ctx);
    // Without save, q/k norm + rope run fused: the same values up to the order of the sum of squares.
    expect(relError(await gpu.readF32(y), await gpu.readF32(plain))).toBeLessThan(1e-6);
    const keys = ['x', 'attnNorm', 'attnRstd', 'qPre', 'qRstd', 'kPre', 'kRstd', 'q', 'k', 'v', 'attn', 'lse', 'h', 'mlpNorm', 'mlpRstd', 'gate', 'up', 'act'];
    expect(Object.keys(save).sort()).toEqual(keys.sort());
    expect(save.x).toBe(x);
    const xs = await gpu.readF32(x);
    expect(relError(await gpu.readF32(save.attnRstd!), rmsnormRef(xs, w.get('model.layers.0.input_layernorm.weight')!, c.rmsNormEps).rstd)).toBeLessThan(1e-5);
    expect(save.lse!.shape).toEqual([19, c.numHeads]);
    expect(relError(await gpu.readF32(save.act!), swigluRef(await gpu.readF32(save.gate!), await gpu.readF32(save.up!)))).toBeLessThan(1e-5);
    releaseLayerSaved(save as LayerSaved);
    model.releaseContext(ctx);
  });

  it('applies the LoRA hook after every linear layer, per module', async () => {
    const gpu = await testGpu();
    const c = CONFIGS[1]![1];
    const { model, w } = await build(gpu, c, 11);
    const r = 2;
    const scale = 2;
    // y += scale·(x·Aᵀ)·Bᵀ, the same delta as merging W + scale·B·A into the CPU reference's weights.
    const dims: Record<LinearModule, [number, number]> = {
      q_proj: [c.numHeads * c.headDim, c.hiddenSize],
      k_proj: [c.numKvHeads * c.headDim, c.hiddenSize],
      v_proj: [c.numKvHeads * c.headDim, c.hiddenSize],
      o_proj: [c.hiddenSize, c.numHeads * c.headDim],
      gate_proj: [c.intermediateSize, c.hiddenSize],
      up_proj: [c.intermediateSize, c.hiddenSize],
      down_proj: [c.hiddenSize, c.intermediateSize],
    };
    const merged: WeightMap = new Map(w);
    const lora = new Map<string, { A: Tensor; B: Tensor }>();
    let seed = 100;
    for (let l = 0; l < c.numLayers; l++) {
      for (const [mod, [out, inp]] of Object.entries(dims) as [LinearModule, [number, number]][]) {
        const A = randn(r * inp, seed++, 0.2);
        const B = randn(out * r, seed++, 0.2);
        const name = `model.layers.${l}.${mod.startsWith('gate') || mod.startsWith('up') || mod.startsWith('down') ? 'mlp' : 'self_attn'}.${mod}.weight`;
        const W = Float32Array.from(w.get(name)!);
        for (let o = 0; o < out; o++) for (let i = 0; i < inp; i++) for (let k = 0; k < r; k++) W[o * inp + i]! += scale * B[o * r + k]! * A[k * inp + i]!;
        merged.set(name, W);
        lora.set(`${l}.${mod}`, { A: gpu.upload(A, [r, inp], 'f32', 'lora_A'), B: gpu.upload(B, [out, r], 'f32', 'lora_B') });
      }
    }
    const calls: string[] = [];
    const adapter: LinearAdapter = {
      apply(g, layer, module, x, y) {
        calls.push(`${layer}.${module}`);
        const { A, B } = lora.get(`${layer}.${module}`)!;
        const xa = matmul(g, x, A, { transB: true });
        matmul(g, xa, B, { transB: true, alpha: scale, accumulate: true, out: y });
        xa.release();
      },
    };
    const ids = randInts(6, 12, c.vocabSize);
    const got = await gpu.readF32(model.forward({ ids, seqLens: [2, 4] }, { adapter }));
    expect(calls).toHaveLength(7 * c.numLayers);
    expect(relError(got, qwen3Ref(c, merged, ids, [2, 4]))).toBeLessThan(1e-4);
  });

  it('f16 weights stay close to the f32 path', async (ctx) => {
    const gpu = await testGpu();
    if (!gpu.f16) return ctx.skip();
    const c = CONFIGS[0]![1];
    const f32 = await build(gpu, c, 13);
    const f16 = new Qwen3Model(gpu, c, uploadWeights(gpu, c, f32.w, 'f16'));
    const ids = randInts(11, 14, c.vocabSize);
    const a = await gpu.readF32(f32.model.forward({ ids, seqLens: [11] }));
    const b = await gpu.readF32(f16.forward({ ids, seqLens: [11] }));
    expect(relError(b, a)).toBeLessThan(1e-2);
    // The f16 KV cache: prefill 8 tokens into it, then 3 more, against the f16 model without a cache.
    const kv = new KvCache(gpu, { layers: c.numLayers, nKv: c.numKvHeads, headDim: c.headDim, numPages: 1, dtype: 'f16' });
    expect(kv.dtype).toBe('f16');
    const pages = kv.allocate(1);
    const rows: number[] = [];
    for (const [cachedLen, n] of [[0, 8], [8, 3]] as const) {
      const batch = kv.buildBatch([{ pages, cachedLen, newTokens: n }]);
      rows.push(...(await gpu.readF32(f16.forward({ ids: ids.subarray(cachedLen, cachedLen + n), seqLens: [n], cache: { kv, batch } }))));
      releaseBatch(batch);
    }
    expect(relError(rows, b)).toBeLessThan(5e-3);
    kv.destroy();
  });

  it('rejects inconsistent batches, naming the problem', async () => {
    const gpu = await testGpu();
    const c = CONFIGS[0]![1];
    const { model } = await build(gpu, c, 15);
    expect(() => model.forward({ ids: Uint32Array.from([1, 2, 3]), seqLens: [2] })).toThrow(/seqLens sum to 2 but there are 3 ids/);
    expect(() => model.forward({ ids: Uint32Array.from([1, 200]), seqLens: [2] })).toThrow(/id 200 at position 1 is outside the vocabulary of 97/);
    expect(() => model.forward({ ids: Uint32Array.from([1]), seqLens: [1], positions: Uint32Array.from([512]) })).toThrow(/position 512 is beyond max_position_embeddings 512/);
  });
});
