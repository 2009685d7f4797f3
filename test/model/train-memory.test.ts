// Buffer sizes of a training step from shapes (src/model/train-memory.ts): the largest activation of a real
// step on a tiny model equals the estimate's, and at Qwen3-0.6B shapes with 4096 tokens every activation and
// gradient buffer stays under WebGPU's default maxStorageBufferBindingSize (128 MiB).
import { describe, expect, it } from 'vitest';
import { Gpu } from '../../src/gpu/gpu.ts';
import { sizeClass } from '../../src/gpu/pool.ts';
import { lossAndGradients, nextTokenBatch } from '../../src/model/backward.ts';
import { LoraAdapter } from '../../src/model/lora.ts';
import { qwen3Preset } from '../../src/model/presets.ts';
import { Qwen3Model } from '../../src/model/qwen3.ts';
import { largestTrainingBuffer, trainingBuffers } from '../../src/model/train-memory.ts';
import { nllLoss, releaseLossResult } from '../../src/rl/loss.ts';
import { randomWeightMap, tinyConfig, uploadWeights } from '../helpers/tiny-qwen3.ts';

const DEFAULT_MAX_BINDING = 128 * 2 ** 20;

describe('training step memory', () => {
  it('the largest activation of a real step is the estimate\'s (logits chunk or MLP rows)', async () => {
    const gpu = await Gpu.create();
    try {
      const c = tinyConfig();
      const model = new Qwen3Model(gpu, c, uploadWeights(gpu, c, randomWeightMap(c, 3)));
      const adapter = LoraAdapter.create(gpu, 'mem', c, { rank: 8, alpha: 16, targets: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] }, { seed: 1, randomB: 0.05 });
      adapter.parameters();
      const seqs = [Array.from({ length: 50 }, (_, i) => (i * 7 + 3) % c.vocabSize), Array.from({ length: 30 }, (_, i) => (i * 11 + 5) % c.vocabSize)];
      const b = nextTokenBatch(seqs);
      const T = b.ids.length;
      const mask = gpu.upload(b.mask, [T], 'f32', 'mask');
      await gpu.sync();
      const before = gpu.memory.largestBufferBytes;
      // chunkRows 16: the MLP rows [T, I] are the largest; 80: the logits chunk [80, vocab].
      for (const chunkRows of [16, 80]) {
        const est = largestTrainingBuffer(c, { tokens: T, sequences: 2, chunkRows, loraRank: 8 });
        expect(est.name).toMatch(chunkRows === 16 ? /mlp/ : /logits chunk/);
        const { result, stats } = lossAndGradients(model, b, (s) => nllLoss(gpu, { logp: s.logp, mask, seqStarts: b.seqStarts }), { adapter, chunkRows });
        await gpu.readF32(result.loss);
        releaseLossResult(result);
        stats.logp.release();
        stats.entropy.release();
        expect(Math.max(before, gpu.memory.largestBufferBytes), `chunkRows ${chunkRows}`).toBe(Math.max(before, sizeClass(est.bytes)));
        expect(sizeClass(est.bytes)).toBeGreaterThan(before);
      }
    } finally {
      gpu.destroy();
    }
  }, 300_000);

  it('Qwen3-0.6B, 1 × 4096 tokens, LoRA r64: every activation and gradient buffer is under 128 MiB', () => {
    const c = qwen3Preset('Qwen3-0.6B');
    for (const shape of [{ tokens: 4096, sequences: 1 }, { tokens: 8 * 1024, sequences: 8 }]) {
      const list = trainingBuffers(c, { ...shape, chunkRows: 128, loraRank: 64 }).filter((b) => b.kind !== 'parameter');
      expect(list.length).toBeGreaterThan(10);
      for (const b of list) expect(b.bytes, b.name).toBeLessThan(DEFAULT_MAX_BINDING);
    }
    const largest = largestTrainingBuffer(c, { tokens: 4096, chunkRows: 128, loraRank: 64 });
    // logits chunk 128 × 151936 f32 = 74.2 MiB; the MLP rows 4096 × 3072 f32 = 48 MiB.
    expect(largest.name).toMatch(/logits chunk/);
    expect(largest.bytes).toBe(128 * 151936 * 4);
    // Full-parameter mode would need the embedding's f32 gradient in one buffer: over the default limit.
    const full = largestTrainingBuffer(c, { tokens: 4096, full: true }, ['gradient']);
    expect(full.bytes).toBeGreaterThan(DEFAULT_MAX_BINDING);
  });
});
