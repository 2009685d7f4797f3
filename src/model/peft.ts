// LoRA adapters in Hugging Face PEFT format: adapter_config.json + adapter_model.safetensors with keys
// base_model.model.model.layers.{i}.{self_attn|mlp}.{module}.lora_{A|B}.weight. Saving returns the bytes
// (written to a directory under Node/Deno, or offered as a download in the browser); loading reads any
// FileSource and refuses what troupe cannot run (DoRA, rsLoRA, per-module rank/alpha, biases, extra
// trainable modules, unknown targets) with an error naming the file and the field.
import type { Gpu } from '../gpu/gpu.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { assertFinite } from '../kernels/nonfinite.ts';
import { atomicWriteFile } from '../util/atomic-write.ts';
import { LINEAR_MODULES, type LinearModule } from './adapter.ts';
import type { Qwen3Config } from './config.ts';
import { checkLoraConfig, linearShapes, LoraAdapter, type LoraConfig, peftKey } from './lora.ts';
import { openSafetensors, SafetensorsError, writeSafetensors, type StDType, type TensorData } from './safetensors.ts';
import type { FileSource } from './source.ts';

export const PEFT_CONFIG_FILE = 'adapter_config.json';
export const PEFT_WEIGHTS_FILE = 'adapter_model.safetensors';

export class PeftError extends Error {
  override name = 'PeftError';
}

export interface PeftFiles {
  [PEFT_CONFIG_FILE]: Uint8Array;
  [PEFT_WEIGHTS_FILE]: Uint8Array;
}

/** adapter_config.json as PEFT (0.17) writes it for a LoRA on a causal LM. */
export function peftConfigJson(c: LoraConfig, baseModel: string | null): Record<string, unknown> {
  return {
    alpha_pattern: {},
    auto_mapping: null,
    base_model_name_or_path: baseModel,
    bias: 'none',
    corda_config: null,
    eva_config: null,
    exclude_modules: null,
    fan_in_fan_out: false,
    inference_mode: true,
    init_lora_weights: true,
    layer_replication: null,
    layers_pattern: null,
    layers_to_transform: null,
    loftq_config: {},
    lora_alpha: c.alpha,
    lora_bias: false,
    lora_dropout: 0.0,
    megatron_config: null,
    megatron_core: 'megatron.core',
    modules_to_save: null,
    peft_type: 'LORA',
    qalora_group_size: 16,
    r: c.rank,
    rank_pattern: {},
    revision: null,
    target_modules: [...c.targets],
    target_parameters: null,
    task_type: 'CAUSAL_LM',
    trainable_token_indices: null,
    use_dora: false,
    use_qalora: false,
    use_rslora: false,
  };
}

export interface SaveOptions {
  /** base_model_name_or_path, e.g. "Qwen/Qwen3-0.6B" */
  baseModel?: string | null;
  /** Storage of A and B (F32: bit-exact round trip). */
  dtype?: Extract<StDType, 'F32' | 'F16' | 'BF16'>;
}

/** The two files of a PEFT adapter directory, as bytes. */
export async function savePeft(gpu: Gpu, adapter: LoraAdapter, opts: SaveOptions = {}): Promise<PeftFiles> {
  const dtype = opts.dtype ?? 'F32';
  const tensors: TensorData[] = [];
  for (const { layer, module, pair } of adapter.entries()) {
    tensors.push({ name: peftKey(layer, module, 'A'), dtype, shape: pair.A.shape, data: await gpu.readF32(pair.A) });
    tensors.push({ name: peftKey(layer, module, 'B'), dtype, shape: pair.B.shape, data: await gpu.readF32(pair.B) });
  }
  const config = JSON.stringify(peftConfigJson(adapter.config, opts.baseModel ?? null), null, 2) + '\n';
  return {
    [PEFT_CONFIG_FILE]: new TextEncoder().encode(config),
    [PEFT_WEIGHTS_FILE]: writeSafetensors(tensors, { format: 'pt' }),
  };
}

/**
 * Writes a saved adapter into a directory (Node and Deno; created if missing). Each file is written
 * atomically (temp file, fsync, rename), the weights before adapter_config.json, so an interrupted save
 * never leaves a directory that loads: the config (what loadPeft looks for first) comes last.
 */
export async function writePeftDir(dir: string, files: PeftFiles): Promise<void> {
  const spec = 'node:fs/promises'; // not resolved by browser bundlers
  const fs = (await import(/* @vite-ignore */ spec)) as typeof import('node:fs/promises');
  await fs.mkdir(dir, { recursive: true });
  const base = dir.replace(/\/$/, '');
  const names = Object.keys(files).sort((a, b) => Number(a === PEFT_CONFIG_FILE) - Number(b === PEFT_CONFIG_FILE));
  for (const name of names) await atomicWriteFile(`${base}/${name}`, (files as unknown as Record<string, Uint8Array>)[name]!);
}

export interface ParsedPeftConfig {
  lora: LoraConfig;
  baseModel: string | null;
  /** Settings accepted but without effect in troupe (e.g. lora_dropout, a training-time setting). */
  notes: string[];
}

type Json = Record<string, unknown>;

const isEmpty = (v: unknown) => v === undefined || v === null || (Array.isArray(v) && v.length === 0) || (typeof v === 'object' && v !== null && !Array.isArray(v) && Object.keys(v).length === 0);

/** Fields parsePeftConfig checks itself. */
const HANDLED = new Set([
  'peft_type', 'task_type', 'use_dora', 'use_rslora', 'use_qalora', 'rank_pattern', 'alpha_pattern', 'bias', 'lora_bias', 'fan_in_fan_out',
  'modules_to_save', 'layers_to_transform', 'layer_replication', 'trainable_token_indices', 'target_parameters', 'exclude_modules',
  'r', 'lora_alpha', 'target_modules', 'lora_dropout', 'base_model_name_or_path',
]);

/** Fields without effect on the adapted model once trained (bookkeeping, initialisation, quantisation helpers). */
const IGNORED = new Set([
  'auto_mapping', 'inference_mode', 'init_lora_weights', 'layers_pattern', 'loftq_config', 'eva_config', 'corda_config', 'lora_ga_config',
  'megatron_config', 'megatron_core', 'peft_version', 'revision', 'qalora_group_size',
]);

const isOff = (v: unknown) => v === false || v === 'none' || isEmpty(v);

/** The targets a PEFT target_modules value selects among a Qwen3 layer's linears. */
function resolveTargets(v: unknown, file: string): LinearModule[] {
  const fullName = (m: LinearModule) => `model.layers.0.${m === 'gate_proj' || m === 'up_proj' || m === 'down_proj' ? 'mlp' : 'self_attn'}.${m}`;
  if (v === 'all-linear') return [...LINEAR_MODULES];
  if (typeof v === 'string') {
    // PEFT: a string is a regex matched in full against module names
    let re: RegExp;
    try {
      re = new RegExp(`^(?:${v})$`);
    } catch (e) {
      throw new PeftError(`${file}: target_modules regex ${JSON.stringify(v)} does not compile: ${(e as Error).message}`);
    }
    const t = LINEAR_MODULES.filter((m) => re.test(fullName(m)));
    if (!t.length) throw new PeftError(`${file}: target_modules regex ${JSON.stringify(v)} matches none of ${LINEAR_MODULES.join(', ')}`);
    return t;
  }
  if (!Array.isArray(v) || !v.length || v.some((x) => typeof x !== 'string')) throw new PeftError(`${file}: target_modules must be a non-empty list of module names, "all-linear" or a regex`);
  const out = new Set<LinearModule>();
  for (const name of v as string[]) {
    // PEFT matches a list entry as a suffix of the module's name at a dot boundary
    const m = LINEAR_MODULES.find((mod) => fullName(mod) === name || fullName(mod).endsWith(`.${name}`));
    if (!m) throw new PeftError(`${file}: target module ${JSON.stringify(name)} is not one troupe adapts (${LINEAR_MODULES.join(', ')})`);
    out.add(m);
  }
  return LINEAR_MODULES.filter((m) => out.has(m));
}

/** Checks adapter_config.json and returns what troupe needs from it. */
export function parsePeftConfig(json: unknown, file = PEFT_CONFIG_FILE): ParsedPeftConfig {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) throw new PeftError(`${file}: not a JSON object`);
  const c = json as Json;
  const refuse = (field: string, why: string) => {
    throw new PeftError(`${file}: ${field} = ${JSON.stringify(c[field])}: ${why}`);
  };
  if (c.peft_type !== 'LORA') refuse('peft_type', 'only LORA adapters are supported');
  if (c.task_type !== undefined && c.task_type !== null && c.task_type !== 'CAUSAL_LM') refuse('task_type', 'only CAUSAL_LM adapters apply to Qwen3ForCausalLM');
  if (c.use_dora === true) refuse('use_dora', 'DoRA is not supported');
  if (c.use_rslora === true) refuse('use_rslora', 'rsLoRA scaling (alpha/√r) is not supported');
  if (c.use_qalora === true) refuse('use_qalora', 'QA-LoRA is not supported');
  if (!isEmpty(c.rank_pattern)) refuse('rank_pattern', 'per-module ranks are not supported');
  if (!isEmpty(c.alpha_pattern)) refuse('alpha_pattern', 'per-module alphas are not supported');
  if (c.bias !== undefined && c.bias !== 'none') refuse('bias', 'only bias "none" is supported');
  if (c.lora_bias === true) refuse('lora_bias', 'LoRA biases are not supported');
  if (c.fan_in_fan_out === true) refuse('fan_in_fan_out', 'Conv1D-style (transposed) weights are not supported');
  if (!isEmpty(c.modules_to_save)) refuse('modules_to_save', 'fully trained extra modules are not supported');
  if (!isEmpty(c.layers_to_transform)) refuse('layers_to_transform', 'adapters on a subset of layers are not supported');
  if (!isEmpty(c.layer_replication)) refuse('layer_replication', 'layer replication is not supported');
  if (!isEmpty(c.trainable_token_indices)) refuse('trainable_token_indices', 'trainable tokens are not supported');
  if (!isEmpty(c.target_parameters)) refuse('target_parameters', 'adapters on raw parameters are not supported');
  if (!isEmpty(c.exclude_modules)) refuse('exclude_modules', 'excluded modules are not supported');
  // Any other setting (newer PEFT variants: aLoRA, Arrow, BD-LoRA, ...) must be at its off value.
  for (const [field, value] of Object.entries(c)) {
    if (HANDLED.has(field) || IGNORED.has(field) || isOff(value)) continue;
    refuse(field, 'a LoRA variant troupe does not support');
  }
  if (typeof c.r !== 'number' || !Number.isInteger(c.r) || c.r < 1) refuse('r', 'must be a positive integer');
  if (typeof c.lora_alpha !== 'number' || !(c.lora_alpha > 0)) refuse('lora_alpha', 'must be a positive number');
  const lora: LoraConfig = { rank: c.r as number, alpha: c.lora_alpha as number, targets: resolveTargets(c.target_modules, file) };
  checkLoraConfig(lora, file);
  const notes: string[] = [];
  if (typeof c.lora_dropout === 'number' && c.lora_dropout > 0) notes.push(`${file}: lora_dropout ${c.lora_dropout} ignored (troupe trains without dropout)`);
  const baseModel = typeof c.base_model_name_or_path === 'string' ? c.base_model_name_or_path : null;
  return { lora, baseModel, notes };
}

export interface LoadedPeft extends ParsedPeftConfig {
  adapter: LoraAdapter;
}

/** Loads a PEFT LoRA adapter (F32, F16 or BF16 tensors) onto the GPU as f32 A and B. */
export async function loadPeft(gpu: Gpu, source: FileSource, model: Qwen3Config, name: string): Promise<LoadedPeft> {
  const where = `${source.name}/${PEFT_CONFIG_FILE}`;
  if (!(await source.exists(PEFT_CONFIG_FILE))) throw new PeftError(`${where}: missing file (not a PEFT adapter directory)`);
  let json: unknown;
  try {
    json = JSON.parse(await source.readText(PEFT_CONFIG_FILE));
  } catch (e) {
    if (e instanceof SyntaxError) throw new PeftError(`${where}: not valid JSON (${e.message})`);
    throw e;
  }
  const parsed = parsePeftConfig(json, where);
  const wfile = `${source.name}/${PEFT_WEIGHTS_FILE}`;
  if (!(await source.exists(PEFT_WEIGHTS_FILE))) {
    const hint = (await source.exists('adapter_model.bin')) ? ' (adapter_model.bin is a pickle: convert it to safetensors)' : '';
    throw new PeftError(`${wfile}: missing file${hint}`);
  }
  const st = await openSafetensors(source, PEFT_WEIGHTS_FILE);
  const shapes = linearShapes(model);
  const r = parsed.lora.rank;
  const expected = new Map<string, number[]>();
  for (let l = 0; l < model.numLayers; l++) {
    for (const m of parsed.lora.targets) {
      expected.set(peftKey(l, m, 'A'), [r, shapes[m].in]);
      expected.set(peftKey(l, m, 'B'), [shapes[m].out, r]);
    }
  }
  const extra = st.names.filter((k) => !expected.has(k));
  if (extra.length) {
    throw new PeftError(`${wfile}: ${extra.length} tensor(s) this adapter config does not explain (first: ${extra.slice(0, 3).join(', ')}); DoRA magnitudes, biases, other targets or layers are not supported`);
  }
  for (const [key, shape] of expected) {
    if (!st.tensors.has(key)) throw new PeftError(`${wfile}: missing tensor ${key}`);
    const info = st.info(key);
    if (info.dtype !== 'F32' && info.dtype !== 'F16' && info.dtype !== 'BF16') throw new PeftError(`${wfile}: tensor ${key} is ${info.dtype}, expected F32, F16 or BF16`);
    if (info.shape.length !== 2 || info.shape[0] !== shape[0] || info.shape[1] !== shape[1]) {
      throw new PeftError(`${wfile}: tensor ${key} has shape [${info.shape}], expected [${shape}] (r=${r})`);
    }
  }
  const loaded = new Map<string, Tensor>();
  try {
    for (const [key, shape] of expected) {
      loaded.set(key, gpu.upload(await st.readF32(key), shape, 'f32', `${name}.${key}`));
    }
    await assertFinite(gpu, wfile, [...loaded].map(([key, tensor]) => ({ name: key, tensor })));
  } catch (e) {
    for (const t of loaded.values()) t.release();
    if (e instanceof SafetensorsError) throw new PeftError(`${wfile}: ${e.message}`);
    throw e;
  }
  const adapter = new LoraAdapter(gpu, name, parsed.lora, model.numLayers, shapes, (l, m) => ({ A: loaded.get(peftKey(l, m, 'A'))!, B: loaded.get(peftKey(l, m, 'B'))! }));
  return { ...parsed, adapter };
}
