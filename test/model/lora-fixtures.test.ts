// LoRA backward against PEFT's gradients (test/fixtures/models/*/grad.safetensors): the loss (token NLL,
// src/rl/loss.ts) is backpropagated by hand through lm_head, the final norm and the last layer's MLP,
// and the LoRA gradients of down_proj, gate_proj and up_proj of that layer are compared with PEFT's.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { logprobs, logprobsBackward } from '../../src/kernels/logprobs.ts';
import { matmul } from '../../src/kernels/matmul.ts';
import { rmsnorm, rmsnormBackward } from '../../src/kernels/rmsnorm.ts';
import { swigluBackward } from '../../src/kernels/swiglu.ts';
import { peftKey } from '../../src/model/lora.ts';
import { loadPeft } from '../../src/model/peft.ts';
import { Qwen3Model, type LayerSaved } from '../../src/model/qwen3.ts';
import { openSafetensors } from '../../src/model/safetensors.ts';
import { DirectorySource } from '../../src/model/source.ts';
import { loadQwen3 } from '../../src/model/weights.ts';
import { nllLoss } from '../../src/rl/loss.ts';
import { testGpu } from '../helpers/gpu.ts';
import { relError } from '../helpers/random.ts';

describe('LoRA gradients vs PEFT fixtures', () => {
  for (const name of ['gqa-tied', 'mha-untied']) {
    it(`${name}: loss and last-layer MLP LoRA gradients`, async () => {
      const dir = join('test/fixtures/models', name);
      if (!existsSync(join(dir, 'grad.safetensors'))) throw new Error(`fixture ${dir}/grad.safetensors missing: run test/fixtures/gen/make_fixtures.py`);
      const gpu = await testGpu();
      const { config, weights } = await loadQwen3(gpu, new DirectorySource(dir), { dtype: 'f32' });
      const { adapter } = await loadPeft(gpu, new DirectorySource(join(dir, 'adapter')), config, name);
      const ref = await openSafetensors(new DirectorySource(dir), 'grad.safetensors');
      const ids = Uint32Array.from(await ref.readInts('ids'));
      const T = ids.length;
      const L = config.numLayers - 1;
      const model = new Qwen3Model(gpu, config, weights);

      // forward, keeping the last layer's intermediates
      const ctx = model.context({ ids, seqLens: [T] }, adapter);
      let x = model.embed(ids);
      for (let i = 0; i < L; i++) {
        const next = model.layerForward(i, x, ctx);
        x.release();
        x = next;
      }
      const saved: Partial<LayerSaved> = {};
      const xFinal = model.layerForward(L, x, ctx, saved);
      const norm = rmsnorm(gpu, xFinal, weights.norm, config.rmsNormEps);
      const logits = matmul(gpu, norm.y, weights.lmHead, { transB: true });

      // next-token NLL, mean over T−1 predictions (the last row predicts nothing: mask 0)
      const targets = gpu.upload(Uint32Array.from({ length: T }, (_, t) => (t + 1 < T ? ids[t + 1]! : 0)), [T], 'u32', 'targets');
      const mask = gpu.upload(Float32Array.from({ length: T }, (_, t) => (t + 1 < T ? 1 : 0)), [T], 'f32', 'mask');
      const stats = logprobs(gpu, logits, targets);
      const loss = nllLoss(gpu, { logp: stats.logp, mask, seqStarts: [0, T] }, { agg: 'token-mean' });
      expect(Math.abs((await gpu.readF32(loss.loss))[0]! - (await ref.readF32('loss'))[0]!)).toBeLessThan(1e-4);

      // backward: logits -> lm_head -> final norm -> down_proj -> swiglu -> gate/up
      logprobsBackward(gpu, logits, targets, stats, { dlogp: loss.dlogp });
      const dNorm = matmul(gpu, logits, weights.lmHead);
      const { dx } = rmsnormBackward(gpu, xFinal, weights.norm, norm.rstd, dNorm);
      const w = weights.layers[L]!;
      const dAct = matmul(gpu, dx, w.down);
      adapter.backward(gpu, L, 'down_proj', saved.act!, dx, dAct);
      const { dGate, dUp } = swigluBackward(gpu, saved.gate!, saved.up!, dAct);
      adapter.backward(gpu, L, 'gate_proj', saved.mlpNorm!, dGate, null);
      adapter.backward(gpu, L, 'up_proj', saved.mlpNorm!, dUp, null);
      for (const m of ['down_proj', 'gate_proj', 'up_proj'] as const) {
        const p = adapter.pair(L, m)!;
        expect(relError(await gpu.readF32(p.dA!), await ref.readF32(peftKey(L, m, 'A')))).toBeLessThan(1e-3);
        expect(relError(await gpu.readF32(p.dB!), await ref.readF32(peftKey(L, m, 'B')))).toBeLessThan(1e-3);
      }
      model.releaseContext(ctx);
      adapter.release();
    });
  }
});
