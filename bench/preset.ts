// The model shape a model-level benchmark runs: a tiny config under --quick, else the released Qwen3 preset named
// by --preset (default Qwen3-0.6B, matched case-insensitively), with an error naming the known ones.
import type { Qwen3Config } from '../src/model/config.ts';
import { QWEN3_PRESETS, qwen3Preset } from '../src/model/presets.ts';

export function benchPreset(bench: string, opts: { quick: boolean; preset?: string }, tiny: Qwen3Config): { name: string; config: Qwen3Config } {
  if (opts.quick) return { name: 'tiny', config: tiny };
  const want = (opts.preset ?? 'Qwen3-0.6B').toLowerCase();
  const found = Object.keys(QWEN3_PRESETS).find((k) => k.toLowerCase() === want);
  if (!found) throw new Error(`${bench}: unknown preset ${opts.preset} (known: ${Object.keys(QWEN3_PRESETS).join(', ')})`);
  return { name: found, config: qwen3Preset(found) };
}
