import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bf16BitsToF32, f32ToBf16Bits, roundF16 } from '../../src/gpu/dtype.ts';
import { GpuLimitError } from '../../src/gpu/errors.ts';
import type { Qwen3Config } from '../../src/model/config.ts';
import { openSafetensors, writeSafetensors, type StDType, type TensorData } from '../../src/model/safetensors.ts';
import { DirectorySource, MemorySource, type FileSource } from '../../src/model/source.ts';
import {
  expectedTensors,
  loadQwen3,
  randomQwen3Weights,
  releaseQwen3Weights,
  weightTensors,
  WeightsError,
  type Qwen3Weights,
} from '../../src/model/weights.ts';
import { testGpu } from '../helpers/gpu.ts';
import { randn } from '../helpers/random.ts';

const FIXTURES = fileURLToPath(new URL('../fixtures/models/', import.meta.url));

function configJson(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    architectures: ['Qwen3ForCausalLM'],
    model_type: 'qwen3',
    hidden_size: 20,
    intermediate_size: 36,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    head_dim: 6,
    vocab_size: 33,
    max_position_embeddings: 64,
    rms_norm_eps: 1e-6,
    rope_theta: 10000,
    tie_word_embeddings: false,
    eos_token_id: 2,
    bos_token_id: 1,
    ...over,
  };
}

function toConfig(j: Record<string, unknown>): Qwen3Config {
  return {
    hiddenSize: j.hidden_size as number,
    intermediateSize: j.intermediate_size as number,
    numLayers: j.num_hidden_layers as number,
    numHeads: j.num_attention_heads as number,
    numKvHeads: j.num_key_value_heads as number,
    headDim: j.head_dim as number,
    rmsNormEps: 1e-6,
    ropeTheta: 10000,
    tieWordEmbeddings: j.tie_word_embeddings as boolean,
    vocabSize: j.vocab_size as number,
    maxPositionEmbeddings: 64,
    bosTokenId: 1,
    eosTokenIds: [2],
    torchDtype: null,
  };
}

/** Random tensors for every expected name (file dtype `dtype`), plus the values they hold after that rounding. */
function checkpoint(cfg: Record<string, unknown>, dtype: StDType, seed = 1): { tensors: TensorData[]; values: Map<string, Float32Array> } {
  const tensors: TensorData[] = [];
  const values = new Map<string, Float32Array>();
  let k = seed;
  for (const s of expectedTensors(toConfig(cfg))) {
    const n = s.shape.reduce((a, b) => a * b, 1);
    let v = randn(n, k++, s.kind === 'norm' ? 1 : 0.5);
    if (dtype === 'BF16') v = v.map((x) => bf16BitsToF32(f32ToBf16Bits(x)));
    if (dtype === 'F16') v = roundF16(v);
    tensors.push({ name: s.name, dtype, shape: s.shape, data: v });
    values.set(s.name, v);
  }
  return { tensors, values };
}

function memoryModel(cfg: Record<string, unknown>, tensors: TensorData[]): MemorySource {
  return new MemorySource({ 'config.json': JSON.stringify(cfg), 'model.safetensors': writeSafetensors(tensors) }, 'mem-model');
}

async function expectWeights(w: Qwen3Weights, values: Map<string, Float32Array>, f16: boolean): Promise<void> {
  const gpu = w.embed.gpu;
  for (const t of weightTensors(w)) {
    const want = values.get(t.label)!;
    expect(t.dtype).toBe(t.shape.length === 1 ? 'f32' : f16 ? 'f16' : 'f32');
    const got = await gpu.readF32(t);
    expect(got).toEqual(f16 && t.dtype === 'f16' ? roundF16(want) : want);
  }
}

describe('loadQwen3 (checkpoints written here)', () => {
  for (const fileDtype of ['F32', 'BF16', 'F16'] as const) {
    for (const target of ['f32', 'f16'] as const) {
      it(`${fileDtype} file -> ${target} on the GPU, untied, in small chunks`, async (ctx) => {
        const gpu = await testGpu();
        if (target === 'f16' && !gpu.f16) return ctx.skip();
        const cfg = configJson();
        const { tensors, values } = checkpoint(cfg, fileDtype);
        const progress: [number, number, string][] = [];
        const { config, weights, notes } = await loadQwen3(gpu, memoryModel(cfg, tensors), {
          dtype: target,
          chunkBytes: 4096 + 6, // odd-sized chunks: several per large tensor, element offsets exercised
          onProgress: (done, total, name) => progress.push([done, total, name]),
        });
        expect(config.numLayers).toBe(2);
        expect(notes).toEqual([]);
        expect(weights.layers).toHaveLength(2);
        expect(weights.lmHead).not.toBe(weights.embed);
        expect(weights.layers[1]!.q.shape).toEqual([24, 20]);
        expect(weights.layers[1]!.down.shape).toEqual([20, 36]);
        expect(weights.layers[0]!.kNorm.shape).toEqual([6]);
        await expectWeights(weights, values, target === 'f16');
        const total = progress[0]![1];
        expect(progress.at(-1)![0]).toBe(total);
        expect(progress.every((p, i) => i === 0 || p[0] > progress[i - 1]![0])).toBe(true);
        expect(new Set(progress.map((p) => p[2])).size).toBe(tensors.length);
        releaseQwen3Weights(weights);
      });
    }
  }

  it('default dtype is f16 when the device has shader-f16, else f32', async () => {
    const gpu = await testGpu();
    const cfg = configJson({ tie_word_embeddings: true });
    const { tensors, values } = checkpoint(cfg, 'F32');
    const { weights } = await loadQwen3(gpu, memoryModel(cfg, tensors));
    expect(weights.embed.dtype).toBe(gpu.f16 ? 'f16' : 'f32');
    expect(weights.lmHead).toBe(weights.embed);
    await expectWeights(weights, values, gpu.f16);
    releaseQwen3Weights(weights);
  });

  describe('sharded bf16 in a directory', () => {
    let dir = '';
    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'troupe-weights-'));
    });
    afterAll(async () => {
      await rm(dir, { recursive: true, force: true });
    });

    it('loads every tensor from its shard', async () => {
      const gpu = await testGpu();
      const cfg = configJson({ num_hidden_layers: 3, num_key_value_heads: 1 });
      const { tensors, values } = checkpoint(cfg, 'BF16', 40);
      const shards = [tensors.slice(0, 13), tensors.slice(13, 25), tensors.slice(25)];
      const weightMap: Record<string, string> = {};
      for (let i = 0; i < shards.length; i++) {
        const file = `model-0000${i + 1}-of-00003.safetensors`;
        await writeFile(join(dir, file), writeSafetensors(shards[i]!));
        for (const t of shards[i]!) weightMap[t.name] = file;
      }
      await writeFile(join(dir, 'model.safetensors.index.json'), JSON.stringify({ metadata: {}, weight_map: weightMap }));
      await writeFile(join(dir, 'config.json'), JSON.stringify(cfg));
      const { weights } = await loadQwen3(gpu, new DirectorySource(dir), { dtype: 'f32' });
      await expectWeights(weights, values, false);
      releaseQwen3Weights(weights);
    });
  });

  describe('a checkpoint that does not fit the config', () => {
    const cfg = configJson();
    const base = () => checkpoint(cfg, 'F32').tensors;

    it('missing tensors are listed', async () => {
      const gpu = await testGpu();
      const ts = base().filter((t) => t.name !== 'model.layers.1.mlp.up_proj.weight' && t.name !== 'model.norm.weight');
      await expect(loadQwen3(gpu, memoryModel(cfg, ts))).rejects.toThrow(/mem-model: checkpoint lacks tensors: model.layers.1.mlp.up_proj.weight, model.norm.weight/);
    });

    it('a wrong shape names the tensor', async () => {
      const gpu = await testGpu();
      const ts = base().map((t) => (t.name === 'model.layers.0.self_attn.k_proj.weight' ? { ...t, shape: [20, 12], data: randn(240, 9) } : t));
      await expect(loadQwen3(gpu, memoryModel(cfg, ts))).rejects.toThrow(/mem-model\/model.safetensors: tensor model.layers.0.self_attn.k_proj.weight has shape \[20,12\], config.json implies \[12,20\]/);
    });

    it('extra tensors are listed; lm_head next to tied embeddings is ignored with a note', async () => {
      const gpu = await testGpu();
      const extra = [...base(), { name: 'model.layers.0.self_attn.q_proj.bias', dtype: 'F32' as const, shape: [24], data: randn(24, 5) }];
      await expect(loadQwen3(gpu, memoryModel(cfg, extra))).rejects.toThrow(WeightsError);
      await expect(loadQwen3(gpu, memoryModel(cfg, extra))).rejects.toThrow(/tensors a Qwen3ForCausalLM does not use: model.layers.0.self_attn.q_proj.bias/);
      const tied = configJson({ tie_word_embeddings: true });
      const { weights, notes } = await loadQwen3(gpu, memoryModel(tied, base()), { dtype: 'f32' });
      expect(notes.join()).toMatch(/lm_head.weight ignored: tie_word_embeddings/);
      expect(weights.lmHead).toBe(weights.embed);
      releaseQwen3Weights(weights);
    });

    it('integer weights, a bad config and a missing config name the problem', async () => {
      const gpu = await testGpu();
      const ints = base().map((t) => (t.name === 'model.norm.weight' ? { ...t, dtype: 'I32' as const, data: new Array(20).fill(1) } : t));
      await expect(loadQwen3(gpu, memoryModel(cfg, ints))).rejects.toThrow(/tensor model.norm.weight is I32; weights must be F32, F16 or BF16/);
      await expect(loadQwen3(gpu, memoryModel({ ...cfg, model_type: 'llama', architectures: ['LlamaForCausalLM'] }, base()))).rejects.toThrow(/mem-model\/config.json: architecture/);
      const noConfig = new MemorySource({ 'model.safetensors': writeSafetensors(base()) }, 'bare');
      await expect(loadQwen3(gpu, noConfig)).rejects.toThrow(/bare: missing file config.json/);
      const badJson = new MemorySource({ 'config.json': '{"hidden_size": ', 'model.safetensors': writeSafetensors(base()) }, 'bad');
      await expect(loadQwen3(gpu, badJson)).rejects.toThrow(/bad\/config.json: not valid JSON/);
    });
  });

  it('refuses tensors over the device limits, naming the tensor and the limit', async () => {
    const gpu = await testGpu();
    const limit = gpu.limits.maxStorageBufferBindingSize;
    // An embedding just over the binding limit in f32; the file claims it but holds no data (never read).
    const hidden = 64;
    const vocab = Math.floor(limit / 4 / hidden) + 1;
    const cfg = configJson({ hidden_size: hidden, num_attention_heads: 4, head_dim: 16, vocab_size: vocab, tie_word_embeddings: true });
    const specs = expectedTensors(toConfig(cfg));
    const header: Record<string, unknown> = {};
    let off = 0;
    for (const s of specs) {
      const bytes = s.shape.reduce((a, b) => a * b, 1) * 4;
      header[s.name] = { dtype: 'F32', shape: s.shape, data_offsets: [off, off + bytes] };
      off += bytes;
    }
    const json = new TextEncoder().encode(JSON.stringify(header));
    const head = new Uint8Array(8 + json.length);
    new DataView(head.buffer).setBigUint64(0, BigInt(json.length), true);
    head.set(json, 8);
    const cfgText = JSON.stringify(cfg);
    const sparse: FileSource = {
      name: 'sparse',
      exists: async (n) => n === 'config.json' || n === 'model.safetensors',
      size: async (n) => (n === 'config.json' ? cfgText.length : head.length + off),
      read: async (n, o, l) => {
        if (n !== 'model.safetensors' || o + l > head.length) throw new Error(`tensor data of ${n} should not be read`);
        return head.slice(o, o + l);
      },
      readText: async () => cfgText,
    };
    const err = await loadQwen3(gpu, sparse, { dtype: 'f32' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GpuLimitError);
    expect(String(err)).toMatch(new RegExp(`tensor model.embed_tokens.weight \\[${vocab},64\\] in f32 needs a \\d+-byte buffer .* over the device's maxStorageBufferBindingSize ${limit}`));
  });
});

describe('randomQwen3Weights', () => {
  it('fills every tensor with the right shape: matrices ~N(0, 0.02), norms ~1', async () => {
    const gpu = await testGpu();
    const cfg = toConfig(configJson({ hidden_size: 64, num_attention_heads: 4, head_dim: 24, vocab_size: 300, intermediate_size: 160 }));
    const w = randomQwen3Weights(gpu, cfg, 5, { dtype: 'f32' });
    const specs = new Map(expectedTensors(cfg).map((s) => [s.name, s]));
    const tensors = weightTensors(w);
    expect(tensors).toHaveLength(specs.size);
    const firstValues = new Set<number>();
    for (const t of tensors) {
      expect(t.shape).toEqual(specs.get(t.label)!.shape);
      const v = await gpu.readF32(t);
      const mean = v.reduce((a, b) => a + b, 0) / v.length;
      const std = Math.sqrt(v.reduce((a, b) => a + (b - mean) ** 2, 0) / v.length);
      const norm = t.shape.length === 1;
      expect(Math.abs(mean - (norm ? 1 : 0))).toBeLessThan(norm ? 0.01 : 0.003);
      expect(Math.abs(std - 0.02)).toBeLessThan(norm ? 0.008 : 0.003);
      firstValues.add(v[0]!);
    }
    expect(firstValues.size).toBe(tensors.length); // each tensor has its own stream
    const again = randomQwen3Weights(gpu, cfg, 5, { dtype: 'f32' });
    expect(await gpu.readF32(again.layers[1]!.gate)).toEqual(await gpu.readF32(w.layers[1]!.gate));
    releaseQwen3Weights(w);
    releaseQwen3Weights(again);
  });
});

describe('fixture models (made by transformers on the GPU machine)', () => {
  const NAMES = ['gqa-tied', 'mha-untied', 'sharded-bf16'] as const;
  const SAMPLE = ['model.embed_tokens.weight', 'model.layers.0.self_attn.q_proj.weight', 'model.layers.1.mlp.down_proj.weight', 'model.layers.1.self_attn.k_norm.weight', 'model.norm.weight'];
  for (const name of NAMES) {
    for (const target of ['f32', 'f16'] as const) {
      it(`${name} -> ${target}`, async (ctx) => {
        const dir = join(FIXTURES, name);
        if (!existsSync(join(dir, 'config.json'))) throw new Error(`fixture missing: ${dir} (made by test/fixtures/gen/make_fixtures.py on the GPU machine)`);
        const gpu = await testGpu();
        if (target === 'f16' && !gpu.f16) return ctx.skip();
        const src = new DirectorySource(dir);
        const { config, weights } = await loadQwen3(gpu, src, { dtype: target });
        const file = await openSafetensors(src);
        expect(weights.layers).toHaveLength(config.numLayers);
        expect(weights.lmHead === weights.embed).toBe(config.tieWordEmbeddings);
        const sample = config.tieWordEmbeddings ? SAMPLE : [...SAMPLE, 'lm_head.weight'];
        const all = new Map(weightTensors(weights).map((t) => [t.label, t]));
        for (const n of sample) {
          const want = await file.readF32(n);
          const t = all.get(n)!;
          expect(t.shape).toEqual(file.info(n).shape);
          expect(await gpu.readF32(t)).toEqual(target === 'f16' && t.shape.length === 2 ? roundF16(want) : want);
        }
        releaseQwen3Weights(weights);
      });
    }
  }
});
