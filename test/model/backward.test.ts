// Gradients through Qwen3 against PEFT + PyTorch (fixtures made on the GPU machine): the mean next-token
// NLL and every LoRA gradient, full-parameter gradients, recomputation on/off, chunked logits, and a
// few SFT steps that lower the loss.
import { beforeAll, describe, expect, it } from 'vitest';
import type { Gpu } from '../../src/gpu/gpu.ts';
import type { Tensor } from '../../src/gpu/tensor.ts';
import { defaultChunkRows, lossAndGradients, nextTokenBatch } from '../../src/model/backward.ts';
import { prefersTensorCores } from '../../src/kernels/matmul.ts';
import { qwen3Preset } from '../../src/model/presets.ts';
import { fullParameters, type LoraAdapter } from '../../src/model/lora.ts';
import { loadPeft } from '../../src/model/peft.ts';
import { Qwen3Model } from '../../src/model/qwen3.ts';
import { DirectorySource } from '../../src/model/source.ts';
import { loadQwen3 } from '../../src/model/weights.ts';
import { AdamW } from '../../src/optim/adamw.ts';
import { nllLoss, releaseLossResult } from '../../src/rl/loss.ts';
import { testGpu } from '../helpers/gpu.ts';
import { relError } from '../helpers/random.ts';
import { FIXTURE_MODELS, readFixture } from '../helpers/tiny-qwen3.ts';

async function nll(gpu: Gpu, model: Qwen3Model, seqs: number[][], opts: Parameters<typeof lossAndGradients>[3] = {}): Promise<number> {
  const b = nextTokenBatch(seqs);
  const mask = gpu.upload(b.mask, [b.mask.length], 'f32', 'mask');
  const { result, stats } = lossAndGradients(model, b, (s) => nllLoss(gpu, { logp: s.logp, mask, seqStarts: b.seqStarts }, { agg: 'token-mean' }), opts);
  const loss = (await gpu.readF32(result.loss))[0]!;
  releaseLossResult(result);
  for (const t of [stats.logp, stats.entropy, mask]) t.release();
  return loss;
}

for (const name of ['gqa-tied', 'mha-untied']) {
  describe(`backward vs PEFT: ${name}`, () => {
    let gpu: Gpu;
    let model: Qwen3Model;
    let adapter: LoraAdapter;
    let ref: Awaited<ReturnType<typeof readFixture>>;
    let ids: number[];

    beforeAll(async () => {
      gpu = await testGpu();
      const dir = `${FIXTURE_MODELS}/${name}`;
      const { config, weights } = await loadQwen3(gpu, new DirectorySource(dir), { dtype: 'f32' });
      model = new Qwen3Model(gpu, config, weights);
      adapter = (await loadPeft(gpu, new DirectorySource(`${dir}/adapter`), config, 'fixture')).adapter;
      ref = await readFixture(`${dir}/grad.safetensors`);
      ids = Array.from(ref.get('ids')!.values);
    });

    it('LoRA: loss and every gradient tensor match PEFT', async () => {
      const params = adapter.parameters();
      const loss = await nll(gpu, model, [ids], { adapter, chunkRows: 8 });
      expect(Math.abs(loss - ref.get('loss')!.values[0]!) / ref.get('loss')!.values[0]!).toBeLessThan(1e-4);
      expect(params.length).toBe(2 * 7 * model.config.numLayers);
      for (const p of params) {
        const want = ref.get(p.name);
        expect(want, p.name).toBeDefined();
        expect(relError(await gpu.readF32(p.grad), want!.values), p.name).toBeLessThan(1e-3);
      }
    });

    it('keeping each layer\'s attention output runs attention once a step instead of twice, with the same gradients', async () => {
      const params = adapter.parameters();
      const runs: { grads: Float32Array[]; attention: number }[] = [];
      for (const keepAttention of [true, false]) {
        for (const p of params) gpu.write(p.grad, new Float32Array(p.grad.size));
        let attention = 0;
        const dispatch = gpu.dispatch.bind(gpu);
        gpu.dispatch = (d) => {
          if (d.label === 'attention_prefill') attention++;
          return dispatch(d);
        };
        try {
          await nll(gpu, model, [ids], { adapter, chunkRows: 8, keepAttention });
        } finally {
          gpu.dispatch = dispatch;
        }
        runs.push({ grads: await Promise.all(params.map((p) => gpu.readF32(p.grad))), attention });
      }
      expect(runs[0]!.attention).toBe(model.config.numLayers);
      expect(runs[1]!.attention).toBe(2 * model.config.numLayers);
      // Not bit-equal: the forward's q and k come from the fused norm + rope pass, the recomputation's from the
      // separate passes (two runs of either path are bit-equal).
      for (const [j, p] of params.entries()) expect(relError(runs[0]!.grads[j]!, runs[1]!.grads[j]!), p.name).toBeLessThan(1e-5);
    });

    it('full-parameter: every base-weight gradient matches PyTorch; recomputation changes nothing', async () => {
      const params = fullParameters(gpu, model.weights);
      const grads = new Map<Tensor, Tensor>(params.map((p) => [p.param, p.grad]));
      const loss = await nll(gpu, model, [ids], { fullGrads: grads, chunkRows: 5 });
      expect(Math.abs(loss - ref.get('full_loss')!.values[0]!) / ref.get('full_loss')!.values[0]!).toBeLessThan(1e-4);
      const first = new Map<string, Float32Array>();
      for (const p of params) {
        const want = ref.get(`full_grad.${p.name}`);
        expect(want, p.name).toBeDefined();
        const got = await gpu.readF32(p.grad);
        first.set(p.name, got.slice());
        expect(relError(got, want!.values), p.name).toBeLessThan(1e-3);
        gpu.write(p.grad, new Float32Array(p.grad.size));
      }
      await nll(gpu, model, [ids], { fullGrads: grads, recompute: false });
      for (const p of params) expect(relError(await gpu.readF32(p.grad), first.get(p.name)!), p.name).toBeLessThan(1e-5);
      for (const p of params) p.grad.release();
    });
  });
}

describe('training steps', () => {
  it('a few LoRA SFT steps with AdamW lower the loss; two packed sequences train together', async () => {
    const gpu = await testGpu();
    const dir = `${FIXTURE_MODELS}/gqa-tied`;
    const { config, weights } = await loadQwen3(gpu, new DirectorySource(dir), { dtype: 'f32' });
    const model = new Qwen3Model(gpu, config, weights);
    const adapter = (await loadPeft(gpu, new DirectorySource(`${dir}/adapter`), config, 'sft')).adapter;
    const opt = new AdamW(gpu, adapter.parameters(), { lr: 1e-2, weightDecay: 0 });
    const seqs = [
      [5, 17, 33, 8, 91, 120, 7, 7, 42, 3, 250, 19],
      [77, 1, 64, 64, 300, 12, 9],
    ];
    const losses: number[] = [];
    for (let step = 0; step < 4; step++) {
      losses.push(await nll(gpu, model, seqs, { adapter }));
      const r = await opt.step();
      expect(r.skipped).toBe(false);
      expect(r.gradNorm).toBeGreaterThan(0);
    }
    for (let i = 1; i < losses.length; i++) expect(losses[i]!).toBeLessThan(losses[i - 1]!);
  });
});

describe('defaultChunkRows', () => {
  it('is 2048 rows of logits where they fit a binding and tensor cores take that lm_head product or a headless runtime drives a GPU, else 128', async () => {
    const gpu = await testGpu();
    const qwen = qwen3Preset('Qwen3-0.6B');
    const tc = prefersTensorCores(gpu, { M: 2048, N: qwen.vocabSize, K: qwen.hiddenSize, transA: false, transB: true });
    const headlessGpu = gpu.report.runtime !== 'browser' && gpu.report.cpuDriver === null;
    const fits = 2048 * qwen.vocabSize * 4 <= gpu.limits.maxStorageBufferBindingSize;
    expect(defaultChunkRows(gpu, qwen)).toBe((tc || headlessGpu) && fits ? 2048 : 128);
    // A vocabulary whose 2048-row logits pass any binding limit keeps 128 rows.
    expect(defaultChunkRows(gpu, { ...qwen, vocabSize: 2 ** 20 })).toBe(128);
  });
});
