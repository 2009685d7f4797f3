// Qwen3ForCausalLM config.json -> the shape numbers the model needs, checked, with Hugging Face's defaults.

export interface Qwen3Config {
  hiddenSize: number;
  intermediateSize: number;
  numLayers: number;
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  rmsNormEps: number;
  ropeTheta: number;
  tieWordEmbeddings: boolean;
  vocabSize: number;
  maxPositionEmbeddings: number;
  bosTokenId: number | null;
  eosTokenIds: number[];
  torchDtype: string | null;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

type Json = Record<string, unknown>;

function fail(file: string, msg: string): never {
  throw new ConfigError(`${file}: ${msg}`);
}

function positiveInt(c: Json, key: string, file: string, fallback?: number): number {
  const v = c[key] ?? fallback;
  if (v === undefined || v === null) fail(file, `missing field ${key}`);
  if (typeof v !== 'number' || !Number.isInteger(v) || v <= 0) fail(file, `field ${key} must be a positive integer, got ${JSON.stringify(v)}`);
  return v;
}

function positiveNumber(c: Json, key: string, file: string, fallback: number): number {
  const v = c[key] ?? fallback;
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) fail(file, `field ${key} must be a positive number, got ${JSON.stringify(v)}`);
  return v;
}

function tokenId(v: unknown, key: string, file: string): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) fail(file, `field ${key} must be a token id, got ${JSON.stringify(v)}`);
  return v;
}

/** Rope theta from transformers 5's `rope_parameters` or the older top-level `rope_theta`; only the default rope. */
function ropeTheta(c: Json, file: string): number {
  for (const key of ['rope_scaling', 'rope_parameters']) {
    const r = c[key];
    if (r === undefined || r === null) continue;
    if (typeof r !== 'object' || Array.isArray(r)) fail(file, `field ${key} must be an object`);
    const type = (r as Json).rope_type ?? (r as Json).type ?? 'default';
    if (type !== 'default') fail(file, `${key}.rope_type ${JSON.stringify(type)} is not supported (only the default rope)`);
  }
  const params = c.rope_parameters as Json | undefined | null;
  if (params && params.rope_theta !== undefined) return positiveNumber(params, 'rope_theta', `${file} rope_parameters`, 10000);
  return positiveNumber(c, 'rope_theta', file, 10000);
}

export function parseQwen3Config(json: unknown, file = 'config.json'): Qwen3Config {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) fail(file, 'not a JSON object');
  const c = json as Json;
  const archs = c.architectures;
  if (archs !== undefined && (!Array.isArray(archs) || !archs.every((a) => typeof a === 'string'))) fail(file, 'field architectures must be a list of strings');
  const isQwen3 = c.model_type === 'qwen3' || (Array.isArray(archs) && archs.includes('Qwen3ForCausalLM'));
  if (!isQwen3) {
    fail(file, `architecture ${JSON.stringify(archs ?? c.model_type ?? null)} (model_type ${JSON.stringify(c.model_type ?? null)}) is not supported: only Qwen3ForCausalLM (model_type "qwen3")`);
  }
  if (c.use_sliding_window === true) fail(file, 'use_sliding_window = true is not supported');
  const layerTypes = c.layer_types;
  if (layerTypes !== undefined && layerTypes !== null) {
    if (!Array.isArray(layerTypes)) fail(file, 'field layer_types must be a list');
    const other = layerTypes.findIndex((t) => t !== 'full_attention');
    if (other >= 0) fail(file, `layer_types[${other}] ${JSON.stringify(layerTypes[other])} is not supported (only full_attention)`);
  }
  if (c.attention_bias === true) fail(file, 'attention_bias = true is not supported (Qwen3 has no attention bias)');
  if (c.hidden_act !== undefined && c.hidden_act !== 'silu') fail(file, `hidden_act ${JSON.stringify(c.hidden_act)} is not supported (only silu)`);

  const hiddenSize = positiveInt(c, 'hidden_size', file);
  const numHeads = positiveInt(c, 'num_attention_heads', file);
  const numKvHeads = positiveInt(c, 'num_key_value_heads', file, numHeads);
  if (numHeads % numKvHeads !== 0) fail(file, `num_attention_heads ${numHeads} is not a multiple of num_key_value_heads ${numKvHeads}`);
  if (c.head_dim === undefined && hiddenSize % numHeads !== 0) {
    fail(file, `missing field head_dim and hidden_size ${hiddenSize} is not a multiple of num_attention_heads ${numHeads}`);
  }
  const headDim = positiveInt(c, 'head_dim', file, hiddenSize / numHeads);
  if (headDim % 2 !== 0) fail(file, `head_dim ${headDim} must be even (rope rotates pairs)`);

  const eos = c.eos_token_id;
  let eosTokenIds: number[] = [];
  if (Array.isArray(eos)) eosTokenIds = eos.map((e, i) => tokenId(e, `eos_token_id[${i}]`, file));
  else if (eos !== undefined && eos !== null) eosTokenIds = [tokenId(eos, 'eos_token_id', file)];
  const bos = c.bos_token_id;
  const dtype = c.torch_dtype ?? c.dtype ?? null;
  if (dtype !== null && typeof dtype !== 'string') fail(file, `field torch_dtype must be a string, got ${JSON.stringify(dtype)}`);
  const tie = c.tie_word_embeddings ?? false;
  if (typeof tie !== 'boolean') fail(file, `field tie_word_embeddings must be a boolean, got ${JSON.stringify(tie)}`);

  return {
    hiddenSize,
    intermediateSize: positiveInt(c, 'intermediate_size', file),
    numLayers: positiveInt(c, 'num_hidden_layers', file),
    numHeads,
    numKvHeads,
    headDim,
    rmsNormEps: positiveNumber(c, 'rms_norm_eps', file, 1e-6),
    ropeTheta: ropeTheta(c, file),
    tieWordEmbeddings: tie,
    vocabSize: positiveInt(c, 'vocab_size', file),
    maxPositionEmbeddings: positiveInt(c, 'max_position_embeddings', file, 32768),
    bosTokenId: bos === undefined || bos === null ? null : tokenId(bos, 'bos_token_id', file),
    eosTokenIds,
    torchDtype: dtype,
  };
}
