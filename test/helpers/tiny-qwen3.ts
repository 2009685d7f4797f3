// Tiny random Qwen3 models for model tests: a config, seeded CPU weights under Hugging Face names (for
// the CPU reference), and the same weights uploaded as Qwen3Weights; fixture reading helpers.
import { readFile } from 'node:fs/promises';
import type { Gpu } from '../../src/gpu/gpu.ts';
import type { Qwen3Config } from '../../src/model/config.ts';
import { readSafetensorsBytes } from '../../src/model/safetensors.ts';
import { Qwen3Model } from '../../src/model/qwen3.ts';
import { DirectorySource } from '../../src/model/source.ts';
import { assembleQwen3Weights, expectedTensors, loadQwen3, type Qwen3Weights } from '../../src/model/weights.ts';
import { randn } from './random.ts';
import type { WeightMap } from '../ref/qwen3.ts';

export function tinyConfig(over: Partial<Qwen3Config> = {}): Qwen3Config {
  return {
    hiddenSize: 32,
    intermediateSize: 56,
    numLayers: 2,
    numHeads: 4,
    numKvHeads: 2,
    headDim: 12,
    rmsNormEps: 1e-6,
    ropeTheta: 10000,
    tieWordEmbeddings: true,
    vocabSize: 97,
    maxPositionEmbeddings: 512,
    bosTokenId: 1,
    eosTokenIds: [2],
    torchDtype: 'float32',
    ...over,
  };
}

/** Seeded weights: matrices N(0, 0.15²) (so attention is not uniform), norms 1 + N(0, 0.2²). */
export function randomWeightMap(c: Qwen3Config, seed: number): WeightMap {
  const m: WeightMap = new Map();
  expectedTensors(c).forEach((s, i) => {
    const n = s.shape.reduce((a, b) => a * b, 1);
    const r = randn(n, seed * 1000 + i, s.kind === 'norm' ? 0.2 : 0.15);
    m.set(s.name, s.kind === 'norm' ? r.map((v) => 1 + v) : r);
  });
  return m;
}

/** The weights on the GPU in the structure Qwen3Model takes (matrices in `dtype`, norms f32). */
export function uploadWeights(gpu: Gpu, c: Qwen3Config, m: WeightMap, dtype: 'f32' | 'f16' = 'f32'): Qwen3Weights {
  return assembleQwen3Weights(c, dtype, (s, dt) => gpu.upload(m.get(s.name)!, s.shape, dt, s.name));
}

export const FIXTURE_MODELS = 'test/fixtures/models';

/** Tensors of a fixture safetensors file; a clear error when the fixture is missing. */
export async function readFixture(path: string): Promise<Map<string, { shape: number[]; values: Float32Array | number[] }>> {
  let bytes: Uint8Array;
  try {
    bytes = new Uint8Array(await readFile(path));
  } catch (e) {
    throw new Error(`fixture ${path} is missing (made by test/fixtures/gen/make_fixtures.py): ${(e as Error).message}`);
  }
  return readSafetensorsBytes(bytes, path).tensors;
}

/** The gqa-tied fixture model (f32) and its transformers greedy reference: prompt and the new ids. */
export async function greedyFixture(gpu: Gpu): Promise<{ model: Qwen3Model; prompt: number[]; greedy: number[] }> {
  const dir = `${FIXTURE_MODELS}/gqa-tied`;
  const { config, weights } = await loadQwen3(gpu, new DirectorySource(dir), { dtype: 'f32' });
  const ref = await readFixture(`${dir}/reference.safetensors`);
  return {
    model: new Qwen3Model(gpu, config, weights),
    prompt: Array.from(ref.get('greedy_prompt')!.values),
    greedy: Array.from(ref.get('greedy_ids')!.values),
  };
}
