// The model options shared by CLI commands: --model DIR (a Hugging Face Qwen3 checkpoint directory, or
// `demo`: the embedded demo model, public/demo-model, the default when neither option is given) or
// --random-weights PRESET (real shapes, random values, for benchmarks), and --dtype for the weights.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Gpu } from '../gpu/gpu.ts';
import { QWEN3_PRESETS, qwen3Preset } from '../model/presets.ts';
import { Qwen3Model } from '../model/qwen3.ts';
import { DirectorySource } from '../model/source.ts';
import { checkTokenIds, TokenIdError, U32_LIMIT } from '../model/token-ids.ts';
import { Qwen3Tokenizer } from '../model/tokenizer.ts';
import type { Qwen3Config } from '../model/config.ts';
import { loadQwen3, randomQwen3Weights, readQwen3Config, type WeightDType } from '../model/weights.ts';
import { UsageError } from './command.ts';

export const MODEL_OPTIONS = {
  model: { type: 'string' },
  'random-weights': { type: 'string' },
  dtype: { type: 'string' },
} as const;

export const MODEL_USAGE = [
  '  --model DIR|demo          a Qwen3ForCausalLM checkpoint (config.json + safetensors); demo (the default):',
  '                            the embedded tiny demo model (public/demo-model)',
  `  --random-weights PRESET   random weights of a released shape (${Object.keys(QWEN3_PRESETS).join(', ')}; any case)`,
  '  --dtype f16|f32           weight storage (default f16 when the GPU has shader-f16, else f32)',
];

export interface ModelArgs {
  model?: string;
  'random-weights'?: string;
  dtype?: string;
}

/** The name `--model demo` stands for: the embedded demo model. */
export const DEMO_MODEL = 'demo';
/** Where the demo model lives: public/demo-model in the repository (Vite serves it at /demo-model), demo-model/ beside dist/troupe.mjs. */
const DEMO_DIRS = ['public/demo-model', 'demo-model'];

export class ModelDirError extends Error {
  override name = 'ModelDirError';
}

/**
 * The directory a --model value names: `demo` -> the embedded demo model, found from this module's
 * location (src/cli in a checkout, .cache/troupe-cli.mjs of bin/troupe.mjs, dist/troupe.mjs of the
 * bundle, which carries a copy in dist/demo-model); anything else is a path, returned as it is.
 */
export function resolveModelDir(name: string): string {
  if (name !== DEMO_MODEL) return name;
  const url = import.meta.url;
  if (!url.startsWith('file:')) return '/demo-model'; // a browser: Vite serves public/ at the root
  let dir = dirname(fileURLToPath(url));
  const tried: string[] = [];
  for (let up = 0; up < 4; up++) {
    for (const d of DEMO_DIRS) {
      const candidate = join(dir, d);
      if (existsSync(join(candidate, 'config.json'))) return candidate;
      tried.push(candidate);
    }
    dir = dirname(dir);
  }
  throw new ModelDirError(`the demo model is missing: no config.json in ${tried.join(', ')}`);
}

/** Loads the model (and the tokenizer of its directory, else the bundled Qwen3 one) the options name; neither option: the demo model. */
export async function openModel(gpu: Gpu, command: string, v: ModelArgs): Promise<{ model: Qwen3Model; tokenizer: Qwen3Tokenizer }> {
  if (v.model !== undefined && v['random-weights'] !== undefined) throw new UsageError(`troupe ${command}: give exactly one of --model or --random-weights`);
  if (v.dtype !== undefined && v.dtype !== 'f16' && v.dtype !== 'f32') throw new UsageError(`troupe ${command}: --dtype must be f16 or f32, got "${v.dtype}"`);
  const dtype = v.dtype as WeightDType | undefined;
  if (v['random-weights'] === undefined) {
    const source = new DirectorySource(resolveModelDir(v.model ?? DEMO_MODEL));
    const { config, weights } = await loadQwen3(gpu, source, { dtype });
    return { model: new Qwen3Model(gpu, config, weights), tokenizer: await Qwen3Tokenizer.load(source) };
  }
  const config = presetConfig(command, v['random-weights']!);
  const weights = randomQwen3Weights(gpu, config, 1234, { dtype });
  return { model: new Qwen3Model(gpu, config, weights), tokenizer: await Qwen3Tokenizer.load() };
}

/** The config of a released shape named in any case (--random-weights). */
function presetConfig(command: string, preset: string): Qwen3Config {
  const name = Object.keys(QWEN3_PRESETS).find((k) => k.toLowerCase() === preset.toLowerCase());
  if (!name) throw new UsageError(`troupe ${command}: unknown preset "${preset}" (known: ${Object.keys(QWEN3_PRESETS).join(', ')})`);
  return qwen3Preset(name);
}

/** Just the config the options name (no weights): a preset's, or the checkpoint directory's config.json. */
export async function openConfig(command: string, v: ModelArgs): Promise<Qwen3Config> {
  if (v.model !== undefined && v['random-weights'] !== undefined) throw new UsageError(`troupe ${command}: give exactly one of --model or --random-weights`);
  if (v['random-weights'] !== undefined) return presetConfig(command, v['random-weights']);
  return readQwen3Config(new DirectorySource(resolveModelDir(v.model ?? DEMO_MODEL)));
}

/**
 * "1,2,3" -> ids, each an integer in [0, vocab) (vocab: the model's, when known; else 2^32, what a u32
 * holds: ids are never wrapped). Errors name the offending id, its position and the vocabulary size.
 */
export function parseIds(command: string, text: string, vocab?: number): number[] {
  const parts = text.split(',').map((s) => s.trim());
  const bad = parts.findIndex((s) => !/^\d+$/.test(s));
  if (!parts.length || bad >= 0) {
    throw new UsageError(`troupe ${command}: --ids must be a comma-separated list of token ids, got "${text}" (position ${bad}: "${parts[bad]}")`);
  }
  const ids = parts.map(Number);
  checkIds(command, ids, vocab);
  return ids;
}

/** Throws a UsageError naming the id, its position and the vocabulary unless every id is in [0, vocab). */
export function checkIds(command: string, ids: readonly number[], vocab = U32_LIMIT): void {
  try {
    checkTokenIds(`troupe ${command}: --ids`, ids, vocab);
  } catch (e) {
    if (e instanceof TokenIdError) throw new UsageError(vocab === U32_LIMIT ? `${e.message} (ids are u32)` : `${e.message} of this model`);
    throw e;
  }
}
