// Greedy continuations through the paged KV cache equal Hugging Face's generate(do_sample=False).
import { describe, expect, it } from 'vitest';
import { generate } from '../../src/model/generate.ts';
import { Qwen3Model } from '../../src/model/qwen3.ts';
import { DirectorySource } from '../../src/model/source.ts';
import { loadQwen3 } from '../../src/model/weights.ts';
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
      const [got] = await generate(model, [prompt], { greedy: true, maxNewTokens: 12 });
      expect(got).toEqual(want);
      model.release();
    });
  }
});
