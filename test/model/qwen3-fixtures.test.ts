// Parity with Hugging Face transformers (test/fixtures/models, made by test/fixtures/gen/make_fixtures.py):
// logits of one sequence and of two sequences packed together, f32 weights (and f16 where the device has it).
import { describe, expect, it } from 'vitest';
import { Qwen3Model } from '../../src/model/qwen3.ts';
import { DirectorySource } from '../../src/model/source.ts';
import { loadQwen3 } from '../../src/model/weights.ts';
import { testGpu } from '../helpers/gpu.ts';
import { relError } from '../helpers/random.ts';
import { FIXTURE_MODELS, readFixture } from '../helpers/tiny-qwen3.ts';

const MODELS = ['gqa-tied', 'mha-untied', 'sharded-bf16'];

describe('Qwen3Model vs transformers', () => {
  for (const name of MODELS) {
    for (const dtype of ['f32', 'f16'] as const) {
      it(`${name} ${dtype} weights: logits of a sequence and of a packed batch of 2`, async (ctx) => {
        const gpu = await testGpu();
        if (dtype === 'f16' && !gpu.f16) return ctx.skip();
        const dir = `${FIXTURE_MODELS}/${name}`;
        const ref = await readFixture(`${dir}/reference.safetensors`);
        const { config, weights } = await loadQwen3(gpu, new DirectorySource(dir), { dtype });
        const model = new Qwen3Model(gpu, config, weights);
        // f32 lands near 1e-6 of the largest logit; f16 storage rounds weights (rel 2^-11), activations stay f32.
        const tol = dtype === 'f32' ? 1e-4 : 3e-3;
        const ids = Uint32Array.from(ref.get('ids')!.values);
        const logits = model.forward({ ids, seqLens: [ids.length] });
        expect(logits.shape).toEqual([ids.length, config.vocabSize]);
        expect(relError(await gpu.readF32(logits), ref.get('logits')!.values)).toBeLessThan(tol);
        const batch = ref.get('batch_ids')!;
        const [S, L] = batch.shape as [number, number];
        const packed = model.forward({ ids: Uint32Array.from(batch.values), seqLens: new Array<number>(S).fill(L) });
        expect(relError(await gpu.readF32(packed), ref.get('batch_logits')!.values)).toBeLessThan(tol);
        model.release();
      });
    }
  }
});
