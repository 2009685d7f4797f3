// Training over f16 base weights (shader-f16: lavapipe under Deno, real GPUs; SwiftShader lacks it and
// skips): the loss and every LoRA gradient against PEFT's f32 reference, within what rounding the weights
// to f16 changes (measured on lavapipe: loss 2e-5, worst gradient 2.9e-3 relative), and against troupe's
// f32 path over the same f16-rounded weights, which isolates the f16 kernels (f32 math) from the rounding.
import { describe, expect, it } from 'vitest';
import { lossAndGradients, nextTokenBatch } from '../../src/model/backward.ts';
import { loadPeft } from '../../src/model/peft.ts';
import { Qwen3Model } from '../../src/model/qwen3.ts';
import { DirectorySource } from '../../src/model/source.ts';
import type { Gpu } from '../../src/gpu/gpu.ts';
import type { Tensor } from '../../src/gpu/tensor.ts';
import type { LoraAdapter } from '../../src/model/lora.ts';
import { loadQwen3, releaseQwen3Weights, type LayerWeights, type Qwen3Weights } from '../../src/model/weights.ts';
import { nllLoss, releaseLossResult } from '../../src/rl/loss.ts';
import { testGpu } from '../helpers/gpu.ts';
import { relError } from '../helpers/random.ts';
import { FIXTURE_MODELS, readFixture } from '../helpers/tiny-qwen3.ts';

/** The same values in f32 tensors (f16 → f32 is exact). */
async function asF32(gpu: Gpu, w: Qwen3Weights): Promise<Qwen3Weights> {
  const up = async (t: Tensor) => gpu.upload(await gpu.readF32(t), t.shape, 'f32', t.label);
  const layers: LayerWeights[] = [];
  for (const l of w.layers) {
    const out = {} as LayerWeights;
    for (const k of Object.keys(l) as (keyof LayerWeights)[]) out[k] = await up(l[k]);
    layers.push(out);
  }
  const embed = await up(w.embed);
  return { embed, layers, norm: await up(w.norm), lmHead: w.lmHead === w.embed ? embed : await up(w.lmHead) };
}

async function lossAndGrads(gpu: Gpu, model: Qwen3Model, adapter: LoraAdapter, ids: number[]): Promise<{ loss: number; grads: Map<string, Float32Array> }> {
  const params = adapter.parameters();
  for (const p of params) gpu.write(p.grad, new Float32Array(p.grad.size));
  const b = nextTokenBatch([ids]);
  const mask = gpu.upload(b.mask, [b.ids.length], 'f32', 'mask');
  const { result, stats } = lossAndGradients(model, b, (s) => nllLoss(gpu, { logp: s.logp, mask, seqStarts: b.seqStarts }), { adapter, chunkRows: 8 });
  const loss = (await gpu.readF32(result.loss))[0]!;
  const grads = new Map<string, Float32Array>();
  for (const p of params) grads.set(p.name, (await gpu.readF32(p.grad)).slice());
  releaseLossResult(result);
  for (const t of [stats.logp, stats.entropy, mask]) t.release();
  return { loss, grads };
}

describe('backward with f16 base weights', () => {
  it('gqa-tied: loss and every LoRA gradient match PEFT within f16 rounding, and the f32 path on the same weights tightly', async (ctx) => {
    const gpu = await testGpu();
    if (!gpu.f16) ctx.skip();
    const dir = `${FIXTURE_MODELS}/gqa-tied`;
    const ref = await readFixture(`${dir}/grad.safetensors`);
    const ids = Array.from(ref.get('ids')!.values);
    const { config, weights } = await loadQwen3(gpu, new DirectorySource(dir), { dtype: 'f16' });
    expect(weights.layers[0]!.q.dtype).toBe('f16');
    expect(weights.embed.dtype).toBe('f16');
    const model = new Qwen3Model(gpu, config, weights);
    const { adapter } = await loadPeft(gpu, new DirectorySource(`${dir}/adapter`), config, 'f16');
    const f16 = await lossAndGrads(gpu, model, adapter, ids);
    const want = ref.get('loss')!.values[0]!;
    expect(Math.abs(f16.loss - want) / want).toBeLessThan(1e-3);
    for (const [name, g] of f16.grads) expect(relError(g, ref.get(name)!.values), name).toBeLessThan(4e-3);

    const rounded = await asF32(gpu, weights);
    const model32 = new Qwen3Model(gpu, config, rounded);
    const f32 = await lossAndGrads(gpu, model32, adapter, ids);
    expect(Math.abs(f16.loss - f32.loss) / f32.loss).toBeLessThan(1e-5);
    for (const [name, g] of f16.grads) expect(relError(g, f32.grads.get(name)!), name).toBeLessThan(1e-4);

    adapter.release();
    for (const m of [model, model32]) m.release();
    releaseQwen3Weights(weights);
    releaseQwen3Weights(rounded);
  }, 600_000);
});
