// Qwen3 weights onto the GPU, streamed: each tensor is read and written chunk by chunk (converted
// bf16/f16/f32 -> target on the GPU), so the model is never held whole in CPU memory. Names and shapes are checked
// against the config, and sizes against the device's limits, before anything is allocated.
import { assertFinite } from '../kernels/nonfinite.ts';
import { BYTES } from '../gpu/dtype.ts';
import type { Gpu } from '../gpu/gpu.ts';
import { GpuLimitError } from '../gpu/errors.ts';
import { sizeClass } from '../gpu/pool.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { cast, castBf16 } from '../kernels/cast.ts';
import { randomNormal } from '../kernels/random.ts';
import { ConfigError, parseQwen3Config, type Qwen3Config } from './config.ts';
import { openSafetensors, ST_BYTES, type SafetensorsSet, type StDType } from './safetensors.ts';
import { type FileSource, sourcePath } from './source.ts';

export interface LayerWeights {
  inputNorm: Tensor;
  postAttnNorm: Tensor;
  qNorm: Tensor;
  kNorm: Tensor;
  q: Tensor;
  k: Tensor;
  v: Tensor;
  o: Tensor;
  gate: Tensor;
  up: Tensor;
  down: Tensor;
}

export interface Qwen3Weights {
  embed: Tensor;
  layers: LayerWeights[];
  norm: Tensor;
  /** The same Tensor as embed when the embeddings are tied. */
  lmHead: Tensor;
}

export type WeightDType = 'f16' | 'f32';

export interface LoadOptions {
  /** Linear and embedding weights; default f16 when the device has shader-f16, else f32. Norms are always f32. */
  dtype?: WeightDType;
  /** After each chunk: source bytes done, source bytes in all, the tensor being loaded. */
  onProgress?: (done: number, total: number, tensor: string) => void;
  /** Count NaN/Inf in every loaded weight on the GPU and refuse the checkpoint, naming the tensor (default true). */
  checkFinite?: boolean;
  /** Source bytes converted at a time (default 8 MiB). */
  chunkBytes?: number;
}

export interface LoadedQwen3 {
  config: Qwen3Config;
  weights: Qwen3Weights;
  /** Things ignored on purpose (e.g. an lm_head.weight next to tied embeddings). */
  notes: string[];
}

export class WeightsError extends Error {
  override name = 'WeightsError';
}

type Kind = 'matrix' | 'norm';
/** One checkpoint tensor: Hugging Face name, shape, and whether it is a norm (kept f32) or a matrix. */
export interface TensorSpec {
  name: string;
  shape: number[];
  kind: Kind;
}

/** Every tensor a Qwen3ForCausalLM checkpoint must have, with its Hugging Face name and shape. */
export function expectedTensors(c: Qwen3Config): TensorSpec[] {
  const q = c.numHeads * c.headDim;
  const kv = c.numKvHeads * c.headDim;
  const specs: TensorSpec[] = [{ name: 'model.embed_tokens.weight', shape: [c.vocabSize, c.hiddenSize], kind: 'matrix' }];
  for (let i = 0; i < c.numLayers; i++) {
    const p = `model.layers.${i}.`;
    specs.push(
      { name: `${p}input_layernorm.weight`, shape: [c.hiddenSize], kind: 'norm' },
      { name: `${p}self_attn.q_proj.weight`, shape: [q, c.hiddenSize], kind: 'matrix' },
      { name: `${p}self_attn.k_proj.weight`, shape: [kv, c.hiddenSize], kind: 'matrix' },
      { name: `${p}self_attn.v_proj.weight`, shape: [kv, c.hiddenSize], kind: 'matrix' },
      { name: `${p}self_attn.o_proj.weight`, shape: [c.hiddenSize, q], kind: 'matrix' },
      { name: `${p}self_attn.q_norm.weight`, shape: [c.headDim], kind: 'norm' },
      { name: `${p}self_attn.k_norm.weight`, shape: [c.headDim], kind: 'norm' },
      { name: `${p}post_attention_layernorm.weight`, shape: [c.hiddenSize], kind: 'norm' },
      { name: `${p}mlp.gate_proj.weight`, shape: [c.intermediateSize, c.hiddenSize], kind: 'matrix' },
      { name: `${p}mlp.up_proj.weight`, shape: [c.intermediateSize, c.hiddenSize], kind: 'matrix' },
      { name: `${p}mlp.down_proj.weight`, shape: [c.hiddenSize, c.intermediateSize], kind: 'matrix' },
    );
  }
  specs.push({ name: 'model.norm.weight', shape: [c.hiddenSize], kind: 'norm' });
  if (!c.tieWordEmbeddings) specs.push({ name: 'lm_head.weight', shape: [c.vocabSize, c.hiddenSize], kind: 'matrix' });
  return specs;
}

function defaultDtype(gpu: Gpu, dtype: WeightDType | undefined): WeightDType {
  if (dtype === 'f16' && !gpu.f16) throw new WeightsError('weights dtype f16 needs the shader-f16 feature, which this device lacks');
  return dtype ?? (gpu.f16 ? 'f16' : 'f32');
}

/** Throws GpuLimitError when a tensor's (pooled) buffer would exceed a device limit. */
function checkLimits(gpu: Gpu, specs: readonly TensorSpec[], dtype: WeightDType): void {
  const bind = gpu.limits.maxStorageBufferBindingSize;
  const buf = gpu.limits.maxBufferSize;
  for (const s of specs) {
    const elems = s.shape.reduce((a, b) => a * b, 1);
    const bytes = elems * (s.kind === 'norm' || dtype === 'f32' ? 4 : 2);
    const pooled = sizeClass(bytes);
    for (const [limit, value] of [['maxStorageBufferBindingSize', bind], ['maxBufferSize', buf]] as const) {
      if (pooled > value) {
        throw new GpuLimitError(
          `tensor ${s.name} [${s.shape}] in ${s.kind === 'norm' ? 'f32' : dtype} needs a ${pooled}-byte buffer (${bytes} bytes of data), over the device's ${limit} ${value}` +
            (dtype === 'f32' && s.kind === 'matrix' ? '; f16 weights would halve it' : ''),
        );
      }
    }
  }
}

/** The Qwen3Weights structure with each tensor from make(spec, storage dtype): matrices in dtype, norms f32. */
export function assembleQwen3Weights(c: Qwen3Config, dtype: WeightDType, make: (s: TensorSpec, dtype: WeightDType) => Tensor): Qwen3Weights {
  const specs = new Map(expectedTensors(c).map((s) => [s.name, s]));
  const t = (name: string) => {
    const s = specs.get(name)!;
    return make(s, s.kind === 'norm' ? 'f32' : dtype);
  };
  const embed = t('model.embed_tokens.weight');
  const layers: LayerWeights[] = [];
  for (let i = 0; i < c.numLayers; i++) {
    const p = `model.layers.${i}.`;
    layers.push({
      inputNorm: t(`${p}input_layernorm.weight`),
      postAttnNorm: t(`${p}post_attention_layernorm.weight`),
      qNorm: t(`${p}self_attn.q_norm.weight`),
      kNorm: t(`${p}self_attn.k_norm.weight`),
      q: t(`${p}self_attn.q_proj.weight`),
      k: t(`${p}self_attn.k_proj.weight`),
      v: t(`${p}self_attn.v_proj.weight`),
      o: t(`${p}self_attn.o_proj.weight`),
      gate: t(`${p}mlp.gate_proj.weight`),
      up: t(`${p}mlp.up_proj.weight`),
      down: t(`${p}mlp.down_proj.weight`),
    });
  }
  const norm = t('model.norm.weight');
  return { embed, layers, norm, lmHead: c.tieWordEmbeddings ? embed : t('lm_head.weight') };
}

/** Every distinct tensor of the weights (the tied lm_head once). */
export function weightTensors(w: Qwen3Weights): Tensor[] {
  const all = [w.embed, ...w.layers.flatMap((l) => Object.values(l) as Tensor[]), w.norm, w.lmHead];
  return [...new Set(all)];
}

export function releaseQwen3Weights(w: Qwen3Weights): void {
  for (const t of weightTensors(w)) t.release();
}

/** Names, shapes and dtypes of the checkpoint against the config; returns notes on ignored tensors. */
function checkCheckpoint(set: SafetensorsSet, c: Qwen3Config, specs: readonly TensorSpec[]): string[] {
  const where = set.source.name;
  const missing = specs.filter((s) => !set.tensors.has(s.name)).map((s) => s.name);
  if (missing.length) {
    const shown = missing.slice(0, 12).join(', ') + (missing.length > 12 ? `, … (${missing.length} in all)` : '');
    throw new WeightsError(`${where}: checkpoint lacks tensors: ${shown}`);
  }
  for (const s of specs) {
    const t = set.tensors.get(s.name)!;
    if (t.shape.length !== s.shape.length || t.shape.some((d, i) => d !== s.shape[i])) {
      throw new WeightsError(`${sourcePath(set.source, t.file)}: tensor ${s.name} has shape [${t.shape}], config.json implies [${s.shape}]`);
    }
    if (t.dtype !== 'F32' && t.dtype !== 'F16' && t.dtype !== 'BF16') {
      throw new WeightsError(`${sourcePath(set.source, t.file)}: tensor ${s.name} is ${t.dtype}; weights must be F32, F16 or BF16`);
    }
  }
  const known = new Set(specs.map((s) => s.name));
  const notes: string[] = [];
  const extra: string[] = [];
  for (const name of set.tensors.keys()) {
    if (known.has(name)) continue;
    if (name === 'lm_head.weight' && c.tieWordEmbeddings) notes.push('lm_head.weight ignored: tie_word_embeddings is true, the embedding is the output head');
    else extra.push(name);
  }
  if (extra.length) throw new WeightsError(`${where}: checkpoint has tensors a Qwen3ForCausalLM does not use: ${extra.slice(0, 12).join(', ')}${extra.length > 12 ? `, … (${extra.length} in all)` : ''}`);
  return notes;
}

/**
 * Elements [start, start + count) of `target` from raw file bytes. Same type: written as they are.
 * Otherwise the raw bytes go to a staging tensor and shaders/cast.wgsl converts them on the GPU (exact
 * round to nearest even, as the CPU would, without a per-element JS loop), then they are copied into place.
 */
function writeChunk(gpu: Gpu, target: Tensor, dtype: StDType, bytes: Uint8Array, start: number, count: number): void {
  const aligned = bytes.byteOffset % 4 === 0 ? bytes : bytes.slice();
  if ((dtype === 'F32' && target.dtype === 'f32') || (dtype === 'F16' && target.dtype === 'f16')) {
    gpu.write(target, dtype === 'F16' ? new Uint16Array(aligned.buffer, aligned.byteOffset, count) : aligned, start);
    return;
  }
  const to = target.dtype as WeightDType;
  let stage: Tensor;
  let out: Tensor;
  if (dtype === 'BF16') {
    stage = gpu.tensor([Math.ceil(count / 2)], 'u32', `${target.label} (bf16 bits)`);
    gpu.write(stage, aligned);
    out = castBf16(gpu, stage, count, to);
  } else {
    stage = gpu.tensor([count], dtype === 'F16' ? 'f16' : 'f32', `${target.label} (${dtype})`);
    gpu.write(stage, dtype === 'F16' ? new Uint16Array(aligned.buffer, aligned.byteOffset, count) : aligned);
    out = cast(gpu, stage, to);
  }
  const per = BYTES[to];
  gpu.copy(out, target, count * per, 0, start * per);
  stage.release();
  out.release();
}

/** Queued writes above this many bytes wait for the GPU, bounding the staging memory. */
const SYNC_EVERY = 256 * 2 ** 20;

/** A checkpoint's config.json, checked (parseQwen3Config); errors name the file. */
export async function readQwen3Config(source: FileSource): Promise<Qwen3Config> {
  const configFile = `${source.name.replace(/\/?$/, '/')}config.json`;
  let json: unknown;
  const text = await source.readText('config.json');
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new ConfigError(`${configFile}: not valid JSON (${(e as Error).message})`);
  }
  return parseQwen3Config(json, configFile);
}

export async function loadQwen3(gpu: Gpu, source: FileSource, opts: LoadOptions = {}): Promise<LoadedQwen3> {
  const config = await readQwen3Config(source);
  const dtype = defaultDtype(gpu, opts.dtype);
  const specs = expectedTensors(config);
  const set = await openSafetensors(source);
  const notes = checkCheckpoint(set, config, specs);
  checkLimits(gpu, specs, dtype);

  const weights = assembleQwen3Weights(config, dtype, (s, dt) => gpu.tensor(s.shape, dt, s.name));
  const byName = new Map<string, Tensor>();
  for (const t of weightTensors(weights)) byName.set(t.label, t);
  const total = specs.reduce((a, s) => a + set.info(s.name).byteLength, 0);
  const chunk = Math.max(4096, opts.chunkBytes ?? 8 * 2 ** 20);
  let done = 0;
  let queued = 0;
  try {
    for (const s of specs) {
      const info = set.info(s.name);
      const target = byName.get(s.name)!;
      const per = ST_BYTES[info.dtype];
      const n = info.byteLength / per;
      // An even element count per chunk keeps f16 writes at 4-byte-aligned offsets.
      const step = Math.max(2, Math.floor(chunk / per / 2) * 2);
      for (let start = 0; start < n; start += step) {
        const count = Math.min(step, n - start);
        const bytes = await set.readBytes(s.name, start, count);
        writeChunk(gpu, target, info.dtype, bytes, start, count);
        done += bytes.length;
        queued += bytes.length;
        if (queued >= SYNC_EVERY) {
          await gpu.sync();
          queued = 0;
        }
        opts.onProgress?.(done, total, s.name);
      }
    }
    await gpu.sync();
    // One GPU pass over every weight as stored (f16 storage included: a bf16 value past 65504 becomes Inf).
    if (opts.checkFinite !== false) await assertFinite(gpu, `checkpoint ${source.name}`, specs.map((s) => ({ name: s.name, tensor: byName.get(s.name)! })));
  } catch (e) {
    releaseQwen3Weights(weights);
    throw e;
  }
  return { config, weights, notes };
}

/**
 * Random weights of the right shapes on the GPU (benchmarks of real sizes without checkpoints):
 * matrices N(0, 0.02²), norms N(1, 0.02²); deterministic in seed.
 */
export function randomQwen3Weights(gpu: Gpu, config: Qwen3Config, seed: number, opts: { dtype?: WeightDType } = {}): Qwen3Weights {
  const dtype = defaultDtype(gpu, opts.dtype);
  checkLimits(gpu, expectedTensors(config), dtype);
  let k = 0;
  return assembleQwen3Weights(config, dtype, (s, dt) => {
    const t = gpu.tensor(s.shape, dt, s.name);
    const tensorSeed = (Math.imul(seed >>> 0, 0x9e3779b1) + Math.imul(++k, 0x85ebca6b)) >>> 0;
    return randomNormal(gpu, t, tensorSeed, s.kind === 'norm' ? 1 : 0, 0.02);
  });
}
