// Weight loading benchmark. random_weights_<model>_<dtype>: randomQwen3Weights for a preset's full shapes
// (GB/s of weights made; the task's bound is < 10 s for Qwen3-0.6B). load_bf16_to_<dtype>_<model>_<L>L:
// loadQwen3 of a bf16 checkpoint with the preset's shapes but L layers, written to a temp directory first
// (read back from the page cache), in GB/s of file bytes. Median of 3 runs after one warm-up.
// bench/torch/bench_load.py times the same names in PyTorch (randn on CUDA; safetensors load_file + .to).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Gpu } from '../src/gpu/gpu.ts';
import { f32ToBf16Bits } from '../src/gpu/dtype.ts';
import type { Qwen3Config } from '../src/model/config.ts';
import { QWEN3_PRESETS } from '../src/model/presets.ts';
import { writeSafetensors } from '../src/model/safetensors.ts';
import { DirectorySource } from '../src/model/source.ts';
import { expectedTensors, loadQwen3, randomQwen3Weights, releaseQwen3Weights, type WeightDType } from '../src/model/weights.ts';
import { benchRow, type BenchRow } from './results.ts';

const RUNS = 3;

async function medianSeconds(fn: () => Promise<void>): Promise<number> {
  await fn();
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t0 = performance.now();
    await fn();
    times.push((performance.now() - t0) / 1000);
  }
  return times.sort((a, b) => a - b)[RUNS >> 1]!;
}

function weightBytes(c: Qwen3Config, dtype: WeightDType): number {
  return expectedTensors(c).reduce((a, s) => a + s.shape.reduce((x, y) => x * y, 1) * (s.kind === 'norm' || dtype === 'f32' ? 4 : 2), 0);
}

/** A bf16 checkpoint of `c`: bf16 bits of N(0, 0.02)-ish values from one repeated block (fast to make). */
function bf16Checkpoint(c: Qwen3Config): Uint8Array {
  const block = new Uint16Array(1 << 20);
  let s = 12345;
  for (let i = 0; i < block.length; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    block[i] = f32ToBf16Bits((((s >>> 8) + 0.5) / (1 << 24) - 0.5) * 0.07);
  }
  return writeSafetensors(
    expectedTensors(c).map((t) => {
      const n = t.shape.reduce((a, b) => a * b, 1);
      const bits = new Uint16Array(n);
      for (let off = 0; off < n; off += block.length) bits.set(block.subarray(0, Math.min(block.length, n - off)), off);
      return { name: t.name, dtype: 'BF16' as const, shape: t.shape, data: new Uint8Array(bits.buffer) };
    }),
  );
}

export async function benchLoad(gpu: Gpu, opts: { quick: boolean; filter?: string }): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const dtypes: WeightDType[] = gpu.f16 ? ['f16', 'f32'] : ['f32'];
  const tiny: Qwen3Config = { ...QWEN3_PRESETS['Qwen3-0.6B'], hiddenSize: 128, intermediateSize: 256, numLayers: 2, numHeads: 4, numKvHeads: 2, headDim: 32, vocabSize: 1000 };
  const models: [string, Qwen3Config][] = opts.quick ? [['tiny', tiny]] : Object.entries(QWEN3_PRESETS);
  for (const [name, c] of models) {
    for (const dtype of dtypes) {
      const row = `random_weights_${name}_${dtype}`;
      if (opts.filter && !row.includes(opts.filter)) continue;
      const s = await medianSeconds(async () => {
        const w = randomQwen3Weights(gpu, c, 1, { dtype });
        await gpu.sync();
        releaseQwen3Weights(w);
      });
      rows.push(benchRow(gpu, row, weightBytes(c, dtype) / s / 1e9, 'GB/s'));
    }
  }
  const layers = opts.quick ? 2 : 4;
  const [name, preset] = opts.quick ? ['tiny', tiny] : ['Qwen3-0.6B', QWEN3_PRESETS['Qwen3-0.6B']];
  const c: Qwen3Config = { ...preset, numLayers: layers };
  const wanted = dtypes.map((d) => [d, `load_bf16_to_${d}_${name}_${layers}L`] as const).filter(([, r]) => !opts.filter || r.includes(opts.filter));
  if (!wanted.length) return rows;
  const dir = await mkdtemp(join(tmpdir(), 'troupe-bench-load-'));
  try {
    const file = bf16Checkpoint(c);
    const config = { architectures: ['Qwen3ForCausalLM'], model_type: 'qwen3', hidden_size: c.hiddenSize, intermediate_size: c.intermediateSize, num_hidden_layers: c.numLayers, num_attention_heads: c.numHeads, num_key_value_heads: c.numKvHeads, head_dim: c.headDim, vocab_size: c.vocabSize, tie_word_embeddings: c.tieWordEmbeddings, rope_theta: c.ropeTheta, rms_norm_eps: c.rmsNormEps, max_position_embeddings: c.maxPositionEmbeddings };
    await writeFile(join(dir, 'model.safetensors'), file);
    await writeFile(join(dir, 'config.json'), JSON.stringify(config));
    for (const [dtype, row] of wanted) {
      const s = await medianSeconds(async () => {
        const { weights } = await loadQwen3(gpu, new DirectorySource(dir), { dtype });
        releaseQwen3Weights(weights);
      });
      rows.push(benchRow(gpu, row, file.length / s / 1e9, 'GB/s'));
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  return rows;
}
