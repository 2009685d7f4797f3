// Greedy continuations through the rollout engine (paged KV cache) equal Hugging Face's greedy tokens.
import { describe, expect, it } from 'vitest';
import { Qwen3Model } from '../../src/model/qwen3.ts';
import { DirectorySource } from '../../src/model/source.ts';
import { loadQwen3 } from '../../src/model/weights.ts';
import { RolloutEngine } from '../../src/rollout/engine.ts';
import { testGpu } from '../helpers/gpu.ts';
import { FIXTURE_MODELS, readFixture } from '../helpers/tiny-qwen3.ts';

describe('greedy generation vs transformers', () => {
  for (const name of ['gqa-tied', 'mha-untied', 'sharded-bf16']) {
    it(`${name}: 12 greedy tokens`, async () => {
      const gpu = await testGpu();
      const dir = `${FIXTURE_MODELS}/${name}`;
      const ref = await readFixture(`${dir}/reference.safetensors`);
      const { config, weights } = await loadQwen3(gpu, new DirectorySource(dir), { dtype: 'f32' });
      const model = new Qwen3Model(gpu, config, weights);
      const prompt = Array.from(ref.get('greedy_prompt')!.values);
      const want = Array.from(ref.get('greedy_ids')!.values).slice(-12); // the 12 new tokens
      const engine = new RolloutEngine(model, null, { kvBudgetBytes: 1 << 20, kvDtype: 'f32' });
      const got = await engine.generate('test', prompt, { maxNewTokens: 12, temperature: 0, ignoreEos: true });
      expect(got.ids).toEqual(want);
      await engine.close();
      model.release();
    });
  }
});
