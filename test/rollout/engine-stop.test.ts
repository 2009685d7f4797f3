// Stop strings in the rollout engine, with the real Qwen3 tokenizer over the gqa-tied fixture model: the
// call ends at the first token after which the text contains a stop string, and the text is cut before it.
import { describe, expect, it } from 'vitest';
import { Qwen3Model } from '../../src/model/qwen3.ts';
import { DirectorySource } from '../../src/model/source.ts';
import { Qwen3Tokenizer } from '../../src/model/tokenizer.ts';
import { loadQwen3 } from '../../src/model/weights.ts';
import { RolloutEngine } from '../../src/rollout/engine.ts';
import { testGpu } from '../helpers/gpu.ts';
import { FIXTURE_MODELS } from '../helpers/tiny-qwen3.ts';

describe('RolloutEngine stop strings', () => {
  it('ends at the first token whose text holds a stop string, text cut before it', async () => {
    const gpu = await testGpu();
    const { config, weights } = await loadQwen3(gpu, new DirectorySource(`${FIXTURE_MODELS}/gqa-tied`), { dtype: 'f32' });
    const model = new Qwen3Model(gpu, config, weights);
    const tokenizer = await Qwen3Tokenizer.load();
    const engine = new RolloutEngine(model, tokenizer, { kvBudgetBytes: 1 << 20, kvDtype: 'f32' });
    const prompt = [40, 77, 301, 12, 250, 99];
    const opts = { maxNewTokens: 10, temperature: 0, ignoreEos: true };
    const full = await engine.generate('any', prompt, opts);
    expect(full.finishReason).toBe('length');
    expect(full.text).toBe(tokenizer.decode(full.ids, { skipSpecialTokens: true }));
    // A stop string taken from the middle of the unconstrained output.
    const stop = tokenizer.decode(full.ids.slice(3, 5), { skipSpecialTokens: true });
    expect(stop.length).toBeGreaterThan(0);
    let n = 1;
    while (!tokenizer.decode(full.ids.slice(0, n), { skipSpecialTokens: true }).includes(stop)) n++;
    const cut = await engine.generate('any', prompt, { ...opts, stop: ['never-appears', stop] });
    expect(cut.finishReason).toBe('stop');
    expect(cut.stoppedBy).toBe(stop);
    expect(cut.ids).toEqual(full.ids.slice(0, n));
    expect(cut.logprobs).toHaveLength(n);
    expect(cut.entropies).toHaveLength(n);
    // Greedy rows report the entropy at T = 1: positive, at most log(vocab).
    for (const h of cut.entropies) {
      expect(h).toBeGreaterThan(0);
      expect(h).toBeLessThanOrEqual(Math.log(config.vocabSize) + 1e-4);
    }
    const text = tokenizer.decode(cut.ids, { skipSpecialTokens: true });
    expect(cut.text).toBe(text.slice(0, text.indexOf(stop)));
    await engine.close();
    expect(engine.freePages).toBe(engine.kv.numPages);
  }, 600_000);
});
