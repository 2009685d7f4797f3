// Model loading and tokenization in headless Chromium: a fixture model from URL (Vite serves the repo;
// HTTP Range, and the OPFS cache) and from the File objects of a directory <input>; the Qwen3 tokenizer.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSafetensors, type SafetensorsSet } from '../../src/model/safetensors.ts';
import { DirectorySource } from '../../src/model/source.ts';
import { startBrowser, type Browser } from './browser.ts';
import type { ModelPageArgs, ModelPageResult } from './pages/model-load.ts';

const MODELS = fileURLToPath(new URL('../fixtures/models/', import.meta.url));
const SAMPLE = ['model.embed_tokens.weight', 'model.layers.2.self_attn.v_proj.weight', 'model.layers.0.input_layernorm.weight', 'lm_head.weight'];

async function expectTensors(r: ModelPageResult, file: SafetensorsSet, sample = SAMPLE): Promise<void> {
  expect(Object.keys(r.tensors ?? {}).sort()).toEqual([...sample].sort());
  for (const name of sample) {
    const got = r.tensors![name]!;
    expect(got.shape).toEqual(file.info(name).shape);
    expect(got.values).toEqual(Array.from(await file.readF32(name)));
  }
}

describe('browser (Chromium): model files and tokenizer', () => {
  let browser: Browser | undefined;
  let file: SafetensorsSet;
  beforeAll(async () => {
    const dir = join(MODELS, 'mha-untied');
    file = await openSafetensors(new DirectorySource(dir)).catch((e: unknown) => {
      throw new Error(`fixture missing: ${dir} (${(e as Error).message})`);
    });
    browser = await startBrowser();
  });
  afterAll(async () => {
    await browser?.close();
  });

  for (const opfs of [false, true]) {
    it(`loads a model from a URL (${opfs ? 'OPFS cache' : 'HTTP Range'})`, async () => {
      const args: ModelPageArgs = { kind: 'url', base: '/test/fixtures/models/mha-untied/', opfs, tensors: SAMPLE };
      const r = await browser!.run<ModelPageResult>('test/e2e/pages/model-load.ts', args);
      expect(r.runtime).toBe('browser');
      expect(r.numLayers).toBe(3);
      expect(r.progressCalls).toBeGreaterThan(10);
      if (opfs) expect(r.opfsFiles).toBeGreaterThanOrEqual(1);
      await expectTensors(r, file);
    });
  }

  it('loads a sharded bf16 model from a URL', async () => {
    const sample = ['model.layers.1.mlp.up_proj.weight', 'lm_head.weight', 'model.norm.weight'];
    const sharded = await openSafetensors(new DirectorySource(join(MODELS, 'sharded-bf16')));
    const args: ModelPageArgs = { kind: 'url', base: '/test/fixtures/models/sharded-bf16/', opfs: false, tensors: sample };
    const r = await browser!.run<ModelPageResult>('test/e2e/pages/model-load.ts', args);
    expect(r.numLayers).toBe(2);
    await expectTensors(r, sharded, sample);
  });

  it('loads a model from the File objects of a directory picker', async () => {
    const page = browser!.page;
    await page.evaluate(() => {
      const input = document.createElement('input');
      input.type = 'file';
      input.id = 'model-files';
      input.multiple = true;
      input.webkitdirectory = true;
      document.body.append(input);
    });
    await page.setInputFiles('#model-files', join(MODELS, 'mha-untied'));
    const r = await browser!.run<ModelPageResult>('test/e2e/pages/model-load.ts', { kind: 'files', input: '#model-files', tensors: SAMPLE });
    await expectTensors(r, file);
  });

  it('loads a model from a directory handle', async () => {
    const files = ['config.json', 'model.safetensors'];
    const args: ModelPageArgs = { kind: 'directory-handle', base: '/test/fixtures/models/mha-untied/', files, tensors: SAMPLE };
    await expectTensors(await browser!.run<ModelPageResult>('test/e2e/pages/model-load.ts', args), file);
  });

  it('tokenizes like Hugging Face', async () => {
    const cases = JSON.parse(await readFile(new URL('../fixtures/tokenizer/cases.json', import.meta.url), 'utf8')) as {
      texts: { text: string; ids: number[] }[];
      chats: { messages: { role: string; content: string }[]; text: string; ids: number[] }[];
    };
    const texts = cases.texts.slice(0, 45);
    const chat = cases.chats[5]!;
    const r = await browser!.run<ModelPageResult>('test/e2e/pages/model-load.ts', { kind: 'tokenizer', texts: texts.map((t) => t.text), chat: chat.messages });
    expect(r.ids).toEqual(texts.map((t) => t.ids));
    expect(r.chatText).toBe(chat.text);
    expect(r.chatIds).toEqual(chat.ids);
    // The only failed loads: probes for an index file that single-file models do not have.
    expect(browser!.errors.filter((e) => !/HTTP 404 for .*\/mha-untied\/model.safetensors.index.json$/.test(e))).toEqual([]);
  });
});
