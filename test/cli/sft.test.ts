// `troupe sft` on a tiny random config: 3 steps lower the loss, the checkpoint reloads (config, weights,
// tokenizer) and scores the rows better than the init; and the weights are f32 masters: at an lr whose
// updates are under half an f16 ulp of the weights, every linear weight still moves.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { command as sft, encodeSftRow, parseSftJsonl, sftBatch } from '../../src/cli/commands/sft.ts';
import { resolveModelDir } from '../../src/cli/model-args.ts';
import { f32ToF16Bits } from '../../src/gpu/dtype.ts';
import { lossAndGradients } from '../../src/model/backward.ts';
import { parseQwen3Config } from '../../src/model/config.ts';
import { baseWeightNames } from '../../src/model/lora.ts';
import { Qwen3Model } from '../../src/model/qwen3.ts';
import { readSafetensorsBytes } from '../../src/model/safetensors.ts';
import { DirectorySource } from '../../src/model/source.ts';
import { Qwen3Tokenizer } from '../../src/model/tokenizer.ts';
import { loadQwen3, randomQwen3Weights } from '../../src/model/weights.ts';
import { nllLoss, releaseLossResult } from '../../src/rl/loss.ts';
import { runCommand } from '../helpers/cli.ts';
import { testGpu } from '../helpers/gpu.ts';

const TOKENIZER = resolveModelDir('demo');
/** The demo model's own vocabulary and eos, so its tokenizer fits this tiny config. */
const DEMO_CONFIG = JSON.parse(readFileSync(join(TOKENIZER, 'config.json'), 'utf8')) as { vocab_size: number; eos_token_id: number };
const CONFIG = {
  architectures: ['Qwen3ForCausalLM'],
  model_type: 'qwen3',
  hidden_size: 32,
  intermediate_size: 64,
  num_hidden_layers: 1,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  head_dim: 8,
  rms_norm_eps: 1e-6,
  rope_theta: 10000,
  tie_word_embeddings: true,
  vocab_size: DEMO_CONFIG.vocab_size,
  max_position_embeddings: 256,
  eos_token_id: DEMO_CONFIG.eos_token_id,
};
const ROWS = [
  { messages: [{ role: 'user', content: 'Solve step by step. Put the final answer in \\boxed{}.\n\nWhat is 7 + 5?' }], completion: '7 + 5 = 12.\n\\boxed{12}' },
  { messages: [{ role: 'user', content: 'Solve step by step. Put the final answer in \\boxed{}.\n\nWhat is 9 - 4?' }], completion: '9 - 4 = 5.\n\\boxed{5}' },
  { messages: [{ role: 'user', content: 'Which solution is correct? Answer \\boxed{N}, N its number.' }], completion: '\\boxed{2}' },
  { messages: [{ role: 'user', content: 'Check this solution.' }, { role: 'assistant', content: '\\boxed{Incorrect} 13 is not 7 + 5.' }] },
];

describe('troupe sft', () => {
  let dir = '';
  let data = '';
  let configFile = '';
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'troupe-sft-'));
    data = join(dir, 'rows.jsonl');
    configFile = join(dir, 'config.json');
    await writeFile(data, ROWS.map((r) => JSON.stringify(r)).join('\n') + '\n');
    await writeFile(configFile, JSON.stringify(CONFIG));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const train = (out: string, lr: string) =>
    runCommand(sft, ['--init-config', configFile, '--tokenizer', TOKENIZER, '--data', data, '--steps', '3', '--batch', '4', '--lr', lr, '--warmup', '0', '--seed', '1', '--out', out]);

  it('masks the loss to the reply tokens and <|im_end|>', async () => {
    const tok = await Qwen3Tokenizer.load(new DirectorySource(TOKENIZER), { required: true });
    const rows = parseSftJsonl(ROWS.map((r) => JSON.stringify(r)).join('\n'));
    expect(rows[3]!.completion).toBe('\\boxed{Incorrect} 13 is not 7 + 5.');
    const ex = rows.map((r) => encodeSftRow(tok, r, 1024));
    const b = sftBatch(ex);
    let o = 0;
    ex.forEach((e, i) => {
      const masked = [...b.mask.slice(o, o + e.ids.length)].reduce((a, m) => a + m, 0);
      const reply = [...tok.encode(rows[i]!.completion), tok.imEndId];
      expect(masked).toBe(reply.length);
      expect(e.ids.slice(e.promptLen)).toEqual(reply);
      expect(b.mask[o + e.promptLen - 1]).toBe(1); // the last prompt position predicts the first reply token
      expect(b.mask[o + e.ids.length - 1]).toBe(0);
      o += e.ids.length;
    });
    expect(() => parseSftJsonl('{"messages": []}')).toThrow(/completion|prompt/);
  });

  it('lowers the loss in 3 steps and writes a checkpoint that reloads', { timeout: 300_000 }, async () => {
    const out = join(dir, 'a');
    const r = await train(out, '1e-2');
    expect(r.code).toBe(0);
    const res = JSON.parse(r.last) as { steps: number; loss: number; firstLoss: number };
    expect(res.steps).toBe(3);
    expect(res.loss).toBeLessThan(res.firstLoss);
    const gpu = await testGpu();
    const source = new DirectorySource(out);
    const { config, weights } = await loadQwen3(gpu, source, { dtype: 'f32' });
    expect(config).toEqual(parseQwen3Config({ ...CONFIG, torch_dtype: 'float32' }));
    const tok = await Qwen3Tokenizer.load(source, { required: true });
    const model = new Qwen3Model(gpu, config, weights);
    const batch = sftBatch(parseSftJsonl(await readFile(data, 'utf8')).map((row) => encodeSftRow(tok, row, 1024)));
    const mask = gpu.upload(batch.mask, [batch.ids.length], 'f32', 'mask');
    const { result, stats } = lossAndGradients(model, batch, (s) => nllLoss(gpu, { logp: s.logp, mask, seqStarts: batch.seqStarts }, { agg: 'token-mean' }));
    const loss = (await gpu.readF32(result.loss))[0]!;
    releaseLossResult(result);
    for (const t of [stats.logp, stats.entropy, mask]) t.release();
    model.release();
    // After 3 updates (the last reported loss was measured after 2).
    expect(loss).toBeLessThan(res.loss);
    expect(loss).toBeLessThan(res.firstLoss - 0.1);
  });

  it('keeps f32 master weights: updates below half an f16 ulp still land', { timeout: 300_000 }, async () => {
    const out = join(dir, 'b');
    const lr = 1e-6;
    expect((await train(out, String(lr))).code).toBe(0);
    const gpu = await testGpu();
    const config = parseQwen3Config(CONFIG);
    const init = randomQwen3Weights(gpu, config, 1, { dtype: 'f32' });
    const saved = readSafetensorsBytes(new Uint8Array(await readFile(join(out, 'model.safetensors')))).tensors;
    let checked = 0;
    for (const { name, tensor } of baseWeightNames(init)) {
      const w0 = await gpu.readF32(tensor);
      const w1 = saved.get(name)!.values as Float32Array;
      expect(saved.get(name)!.dtype, name).toBe('F32');
      expect(w1.length, name).toBe(w0.length);
      if (name.includes('embed') || name.endsWith('norm.weight')) continue; // unused rows get no update; norms sit at 1
      let moved = 0;
      let f16Moved = 0;
      let maxStep = 0;
      for (let i = 0; i < w0.length; i++) {
        const d = Math.abs(w1[i]! - w0[i]!);
        maxStep = Math.max(maxStep, d);
        if (d > 0) moved++;
        if (f32ToF16Bits(w1[i]!) !== f32ToF16Bits(w0[i]!)) f16Moved++;
      }
      expect(maxStep, name).toBeLessThan(3 * lr * 1.5);
      expect(moved / w0.length, name).toBeGreaterThan(0.9);
      // Stored in f16, most of these weights would not have changed at all.
      expect(f16Moved / w0.length, name).toBeLessThan(0.5);
      checked++;
    }
    expect(checked).toBe(7);
    for (const t of [init.embed, init.norm, ...init.layers.flatMap((l) => Object.values(l))]) t.release();
  });

  it('refuses bad arguments', async () => {
    await expect(runCommand(sft, ['--data', data, '--out', dir])).rejects.toThrow(/exactly one of --init-config or --model/);
    await expect(runCommand(sft, ['--init-config', configFile, '--out', dir])).rejects.toThrow(/--data is required/);
    await expect(runCommand(sft, ['--init-config', configFile, '--data', data, '--out', dir, '--steps=1.5'])).rejects.toThrow(/--steps must be an integer >= 0/);
  });
});
