// Shapes of the released Qwen3 models (from their config.json), for benchmarks and random-weight runs.
import type { Qwen3Config } from './config.ts';

const COMMON = {
  numKvHeads: 8,
  headDim: 128,
  rmsNormEps: 1e-6,
  ropeTheta: 1_000_000,
  tieWordEmbeddings: true,
  vocabSize: 151936,
  maxPositionEmbeddings: 40960,
  bosTokenId: 151643,
  torchDtype: 'bfloat16',
} as const;

export const QWEN3_PRESETS = {
  'Qwen3-0.6B': { ...COMMON, eosTokenIds: [151645], hiddenSize: 1024, intermediateSize: 3072, numLayers: 28, numHeads: 16 },
  'Qwen3-1.7B': { ...COMMON, eosTokenIds: [151645], hiddenSize: 2048, intermediateSize: 6144, numLayers: 28, numHeads: 16 },
  'Qwen3-4B': { ...COMMON, eosTokenIds: [151645], hiddenSize: 2560, intermediateSize: 9728, numLayers: 36, numHeads: 32 },
} satisfies Record<string, Qwen3Config>;

export type Qwen3PresetName = keyof typeof QWEN3_PRESETS;

export function qwen3Preset(name: string): Qwen3Config {
  const p = (QWEN3_PRESETS as Record<string, Qwen3Config>)[name];
  if (!p) throw new Error(`unknown Qwen3 preset ${name} (known: ${Object.keys(QWEN3_PRESETS).join(', ')})`);
  return { ...p, eosTokenIds: [...p.eosTokenIds] };
}
