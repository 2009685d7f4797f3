// The embedded demo model (public/demo-model, `--model demo`): it loads with troupe (config, weights,
// tokenizer), the tokenizer gives transformers' ids and round-trips text exactly, and greedy generation
// on a demo prompt answers in the generator format (`Guess: \boxed{N}`, or `Work: a + b = ... = N.` then `\boxed{N}`).
import { statSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveModelDir } from '../../src/cli/model-args.ts';
import { DEMO_SPECIAL_TOKENS, learnMerges } from '../../src/model/demo/bpe.ts';
import { buildDemoCorpus, chatmlText } from '../../src/model/demo/corpus.ts';
import { Qwen3Model } from '../../src/model/qwen3.ts';
import { DirectorySource } from '../../src/model/source.ts';
import { Qwen3Tokenizer } from '../../src/model/tokenizer.ts';
import { loadQwen3 } from '../../src/model/weights.ts';
import { RolloutEngine } from '../../src/rollout/engine.ts';
import { gradeTask } from '../../src/tasks/grade.ts';
import { loadTasks } from '../../src/tasks/source.ts';
import { SINGLE_PROMPTS } from '../../src/workflows/index.ts';
import { evaluatorViolations, lastBoxed, orchestratorViolations, parseChoice } from '../../src/workflows/parse.ts';
import { readFile } from 'node:fs/promises';
import { testGpu } from '../helpers/gpu.ts';

const DIR = resolveModelDir('demo');
const PROMPT = 'Solve step by step. Put the final answer in \\boxed{}.\n\nWhat is 17 + 5?';
/** transformers 5.17 PreTrainedTokenizerFast / AutoTokenizer on public/demo-model: apply_chat_template(
 * [{user: PROMPT}], add_generation_prompt=True, enable_thinking=False), then encode. */
const HF_CHAT_IDS = [515, 300, 10, 324, 282, 311, 282, 46, 335, 264, 321, 312, 309, 265, 261, 320, 294, 280, 32, 49, 55, 274, 32, 53, 63, 516, 10, 515, 299, 10];

describe('demo model', () => {
  it('is where --model demo points, small, and a Qwen3 config troupe parses', async () => {
    expect(DIR.replace(/\\/g, '/')).toMatch(/public\/demo-model$/);
    const files = readdirSync(DIR);
    for (const f of ['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json', 'README.md']) expect(files).toContain(f);
    const bytes = files.reduce((a, f) => a + statSync(join(DIR, f)).size, 0);
    expect(bytes).toBeLessThan(4 * 2 ** 20);
    const gpu = await testGpu();
    const { config, weights } = await loadQwen3(gpu, new DirectorySource(DIR), { dtype: 'f32' });
    expect(config.numLayers).toBeGreaterThanOrEqual(2);
    expect(config.numHeads).toBe(4);
    expect(config.numKvHeads).toBe(2);
    expect(config.tieWordEmbeddings).toBe(true);
    expect(config.maxPositionEmbeddings).toBeGreaterThanOrEqual(1024);
    expect(weights.lmHead).toBe(weights.embed);
    new Qwen3Model(gpu, config, weights).release();
  });

  it('has a byte-level BPE tokenizer with transformers\' ids that round-trips text exactly', async () => {
    const tok = await Qwen3Tokenizer.load(new DirectorySource(DIR), { required: true });
    const gpu = await testGpu();
    const { config, weights } = await loadQwen3(gpu, new DirectorySource(DIR), { dtype: 'f32' });
    new Qwen3Model(gpu, config, weights).release();
    expect(tok.vocabSize).toBeLessThanOrEqual(config.vocabSize);
    expect(tok.vocabSize).toBeGreaterThan(256 + DEMO_SPECIAL_TOKENS.length);
    expect(tok.eosToken).toBe('<|im_end|>');
    expect(config.eosTokenIds).toContain(tok.imEndId);
    for (const s of DEMO_SPECIAL_TOKENS) expect(tok.specialIds.has(tok.tokenId(s))).toBe(true);
    expect(tok.encodeChat([{ role: 'user', content: PROMPT }])).toEqual(HF_CHAT_IDS);
    expect(tok.renderChat([{ role: 'user', content: 'hi' }])).toBe('<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n');
    // Digits are single tokens (the Qwen pre-tokenizer splits numbers digit by digit).
    expect(tok.encode('12345')).toHaveLength(5);
    for (const s of [PROMPT, '  two  spaces\n\n\ttab\r\n', 'héllo wörld, naïve café — 日本語 😀', "it's we'll I'M", '\\boxed{-42} 3.14 x^2', '<|im_start|>user\nx<|im_end|>']) {
      expect(tok.decode(tok.encode(s))).toBe(s);
    }
  });

  it('answers a demo prompt greedily in the generator format', { timeout: 300_000 }, async () => {
    const gpu = await testGpu();
    const source = new DirectorySource(DIR);
    const { config, weights } = await loadQwen3(gpu, source, { dtype: 'f32' });
    const model = new Qwen3Model(gpu, config, weights);
    const tok = await Qwen3Tokenizer.load(source, { required: true });
    const engine = new RolloutEngine(model, tok, { kvBudgetBytes: 1 << 20, kvDtype: 'f32' });
    const tasks = (await loadTasks({ kind: 'math', builtin: 'demo', seed: 0, train: 1, validation: 3 })).validation;
    const replies = await Promise.all(tasks.map((t) => engine.generate('generator', [{ role: 'user', content: SINGLE_PROMPTS.math.generator({ problem: t.prompt }) }], { temperature: 0, maxNewTokens: 24 })));
    for (const [i, r] of replies.entries()) {
      const expr = tasks[i]!.prompt.replace(/^What is (.*)\?$/, '$1');
      expect(r.finishReason).toBe('stop');
      // The teacher's two strategies (src/model/demo/teacher.ts): a guess, or the sum worked out.
      const worked = new RegExp(`^Work: ${expr.replace(/[+]/g, '\\+')}( = [\\d +-]+)* = (\\d+)\\.\\n\\\\boxed\\{(\\d+)\\}$`).exec(r.text);
      if (worked) expect(worked[3]).toBe(worked[2]);
      else expect(r.text).toMatch(/^Guess: \\boxed\{\d+\}$/);
      expect(['0', '1']).toContain(String((await gradeTask(tasks[i]!, r.text)).reward));
    }
    await engine.close();
    model.release();
  });

  it('is reproducible: the teacher corpus over the workflows gives back the committed merges, every role in its format', { timeout: 120_000 }, async () => {
    const rows = await buildDemoCorpus({ seed: 0 });
    const committed = JSON.parse(await readFile(join(DIR, 'tokenizer.json'), 'utf8')) as { model: { merges: [string, string][] } };
    expect(learnMerges(rows.map(chatmlText), 320)).toEqual(committed.model.merges);
    const roles = new Set(rows.map((r) => r.role));
    expect([...roles].sort()).toEqual(['aggregator', 'evaluator', 'generator', 'orchestrator', 'synthesizer', 'worker']);
    expect(new Set(rows.map((r) => r.workflow)).size).toBe(4);
    for (const r of rows.slice(0, 2000)) {
      if (r.role === 'generator' || r.role === 'worker' || r.role === 'synthesizer') expect(lastBoxed(r.completion), r.completion).toMatch(/^\d+$/);
      if (r.role === 'evaluator') expect(evaluatorViolations(r.completion)).toEqual([]);
      if (r.role === 'aggregator') expect(parseChoice(r.completion, 3).parsedBy).toBe('boxed');
      if (r.role === 'orchestrator') expect(orchestratorViolations(r.completion)).toEqual([]);
    }
  });
});
