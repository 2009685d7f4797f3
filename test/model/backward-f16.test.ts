// Training over f16 base weights (shader-f16: lavapipe under Deno, real GPUs; SwiftShader lacks it and
// skips): the loss and every LoRA gradient against PEFT's f32 reference, within f16 weight rounding.
import { describe, expect, it } from 'vitest';
import { lossAndGradients, nextTokenBatch } from '../../src/model/backward.ts';
import { loadPeft } from '../../src/model/peft.ts';
import { Qwen3Model } from '../../src/model/qwen3.ts';
import { DirectorySource } from '../../src/model/source.ts';
import { loadQwen3, releaseQwen3Weights } from '../../src/model/weights.ts';
import { nllLoss, releaseLossResult } from '../../src/rl/loss.ts';
import { testGpu } from '../helpers/gpu.ts';
import { relError } from '../helpers/random.ts';
import { FIXTURE_MODELS, readFixture } from '../helpers/tiny-qwen3.ts';

describe('backward with f16 base weights', () => {
  it('gqa-tied: loss within 1e-3 and every LoRA gradient within 3e-3 of PEFT', async (ctx) => {
    const gpu = await testGpu();
    if (!gpu.f16) ctx.skip();
    const dir = `${FIXTURE_MODELS}/gqa-tied`;
    const ref = await readFixture(`${dir}/grad.safetensors`);
    const { config, weights } = await loadQwen3(gpu, new DirectorySource(dir), { dtype: 'f16' });
    expect(weights.layers[0]!.q.dtype).toBe('f16');
    const model = new Qwen3Model(gpu, config, weights);
    const { adapter } = await loadPeft(gpu, new DirectorySource(`${dir}/adapter`), config, 'f16');
    const params = adapter.parameters();
    const b = nextTokenBatch([Array.from(ref.get('ids')!.values)]);
    const mask = gpu.upload(b.mask, [b.ids.length], 'f32', 'mask');
    const { result, stats } = lossAndGradients(model, b, (s) => nllLoss(gpu, { logp: s.logp, mask, seqStarts: b.seqStarts }), { adapter, chunkRows: 8 });
    const loss = (await gpu.readF32(result.loss))[0]!;
    const want = ref.get('loss')!.values[0]!;
    expect(Math.abs(loss - want) / want).toBeLessThan(1e-3);
    for (const p of params) expect(relError(await gpu.readF32(p.grad), ref.get(p.name)!.values), p.name).toBeLessThan(3e-3);
    releaseLossResult(result);
    for (const t of [stats.logp, stats.entropy, mask]) t.release();
    adapter.release();
    model.release();
    releaseQwen3Weights(weights);
  }, 600_000);
});
