// Training over f16 base weights (shader-f16: lavapipe under Deno, real GPUs; SwiftShader lacks it and
// skips): the loss and every LoRA gradient against PEFT's f32 reference, within what rounding the weights
// to f16 changes (measured on lavapipe: loss 2e-5, worst gradient 2.9e-3 relative), and against troupe's
// f32 path over the same f16-rounded weights, which isolates the f16 kernels (f32 math) from the rounding.
// That runs on the f32 kernels (matmul policy 'f32'); on a device with tensor cores a second case sends every
// x·Wᵀ the direct tensor-core kernel can take to it (policy 'tc_direct': lm_head and down_proj here), which also
// rounds the activations to f16 (src/kernels/matmul-tc.ts).
import { describe, expect, it } from 'vitest';
import { pickMatmulVariant, setMatmulPolicy } from '../../src/kernels/matmul.ts';
import { tensorCoreUnavailable } from '../../src/kernels/matmul-tc.ts';
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

async function loadF16(gpu: Gpu) {
  const dir = `${FIXTURE_MODELS}/gqa-tied`;
  const ref = await readFixture(`${dir}/grad.safetensors`);
  const { config, weights } = await loadQwen3(gpu, new DirectorySource(dir), { dtype: 'f16' });
  const { adapter } = await loadPeft(gpu, new DirectorySource(`${dir}/adapter`), config, 'f16');
  return { ref, config, weights, adapter, ids: Array.from(ref.get('ids')!.values) };
}

const gpu = await testGpu();

describe('backward with f16 base weights', () => {
  it('gqa-tied: loss and every LoRA gradient match PEFT within f16 rounding, and the f32 path on the same weights tightly', async (ctx) => {
    if (!gpu.f16) ctx.skip();
    const before = setMatmulPolicy(gpu, 'f32');
    try {
      const { ref, config, weights, adapter, ids } = await loadF16(gpu);
      expect(weights.layers[0]!.q.dtype).toBe('f16');
      expect(weights.embed.dtype).toBe('f16');
      const model = new Qwen3Model(gpu, config, weights);
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
    } finally {
      setMatmulPolicy(gpu, before);
    }
  }, 600_000);

  // f16 activations in the tensor-core products cost about 2e-3 of the logits and 4e-3 of the gradients on the
  // fixtures (bench/RESULTS.md, tensor-core matmul version 3): the bounds leave 2.5x of that.
  it.skipIf(tensorCoreUnavailable(gpu) !== null)('gqa-tied with x·Wᵀ on direct tensor cores: within their f16 rounding of PEFT', async () => {
    const before = setMatmulPolicy(gpu, 'tc_direct');
    try {
      const { ref, config, weights, adapter, ids } = await loadF16(gpu);
      const lmHead = { M: ids.length - 1, N: config.vocabSize, K: config.hiddenSize, transA: false, transB: true };
      expect(pickMatmulVariant(gpu, lmHead, { a: 'f32', b: 'f16' })).toBe('tc_direct');
      const model = new Qwen3Model(gpu, config, weights);
      const got = await lossAndGrads(gpu, model, adapter, ids);
      const want = ref.get('loss')!.values[0]!;
      expect(Math.abs(got.loss - want) / want).toBeLessThan(5e-3);
      for (const [name, g] of got.grads) expect(relError(g, ref.get(name)!.values), name).toBeLessThan(1e-2);
      adapter.release();
      model.release();
      releaseQwen3Weights(weights);
    } finally {
      setMatmulPolicy(gpu, before);
    }
  }, 600_000);
});
