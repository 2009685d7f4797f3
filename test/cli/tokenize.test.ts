import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { command } from '../../src/cli/commands/tokenize.ts';
import { runCommand } from '../helpers/cli.ts';

const run = (argv: string[]) => runCommand(command, argv);

describe('troupe tokenize', () => {
  let dir = '';
  let cases: { texts: { text: string; ids: number[] }[]; chats: { messages: unknown[]; text: string; ids: number[] }[] };
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'troupe-tok-'));
    cases = JSON.parse(await readFile(new URL('../fixtures/tokenizer/cases.json', import.meta.url), 'utf8'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('--text prints the ids and the text', async () => {
    const c = cases.texts.find((t) => t.text.includes('<|im_start|>'))!;
    const { code, last } = await run(['--text', c.text]);
    expect(code).toBe(0);
    expect(JSON.parse(last)).toEqual({ ids: c.ids, text: c.text });
  });

  it('--chat prints the rendered template and its ids', async () => {
    const c = cases.chats[2]!;
    const file = join(dir, 'chat.json');
    await writeFile(file, JSON.stringify(c.messages));
    const { code, last } = await run(['--chat', file]);
    expect(code).toBe(0);
    expect(JSON.parse(last)).toEqual({ ids: c.ids, text: c.text });
  });

  it('wrong arguments are usage errors naming the problem', async () => {
    await expect(run([])).rejects.toThrow(/exactly one of --text or --chat/);
    await expect(run(['--chat', join(dir, 'none.json')])).rejects.toThrow(/cannot read --chat .*none.json/);
    const bad = join(dir, 'bad.json');
    await writeFile(bad, '[{"role": "user"}]');
    await expect(run(['--chat', bad])).rejects.toThrow(/must hold a list of \{"role", "content"\} messages/);
    // --model names the tokenizer to use: a directory without its files is an error, not the shipped one.
    await expect(run(['--text', 'hi', '--model', dir])).rejects.toThrow(/no tokenizer.json and tokenizer_config.json/);
  });
});
