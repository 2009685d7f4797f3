// `troupe generate --n K --adapter DIR`: K samples in one batch through the rollout engine, with a PEFT adapter.
import { describe, expect, it } from 'vitest';
import { command as generate } from '../../src/cli/commands/generate.ts';
import { runCommand } from '../helpers/cli.ts';
import { FIXTURE_MODELS } from '../helpers/tiny-qwen3.ts';

async function lastJson(argv: string[]): Promise<unknown> {
  const { code, last } = await runCommand(generate, argv);
  expect(code).toBe(0);
  return JSON.parse(last);
}

const model = `${FIXTURE_MODELS}/gqa-tied`;
const base = ['--model', model, '--dtype', 'f32', '--ids', '5,6,7,8', '--max-new-tokens', '5', '--ignore-eos', '--json'];

describe('troupe generate through the engine', () => {
  it('--n K prints K samples; the same seed gives the same K; an adapter changes the output', async () => {
    const sampled = ['--n', '3', '--temperature', '0.9', '--seed', '4'];
    const a = (await lastJson([...base, ...sampled])) as { ids: number[]; text: string }[];
    expect(a).toHaveLength(3);
    for (const s of a) {
      expect(s.ids).toHaveLength(5);
      expect(typeof s.text).toBe('string');
    }
    expect(new Set(a.map((s) => s.ids.join(','))).size).toBeGreaterThan(1);
    expect(await lastJson([...base, ...sampled])).toEqual(a);
    const plain = (await lastJson(base)) as { ids: number[] };
    const adapted = (await lastJson([...base, '--adapter', `${model}/adapter`])) as { ids: number[] };
    expect(plain.ids).toHaveLength(5);
    expect(adapted.ids).not.toEqual(plain.ids);
  }, 600_000);

  it('rejects a bad --n and a missing adapter, naming them', async () => {
    await expect(generate.run([...base, '--n', '0'])).rejects.toThrow(/--n must be a positive integer/);
    await expect(generate.run([...base, '--adapter', '/nonexistent-adapter'])).rejects.toThrow(/nonexistent-adapter\/adapter_config.json: missing file/);
  }, 600_000);
});
