// The browser app's pure parts: the store-only zip, Hugging Face ids/URLs -> URL bases, settings checks
// and the TrainerConfig they make.
import { describe, expect, it } from 'vitest';
import { checkSettings, DEFAULT_SETTINGS, modelUrlBase, trainerConfig } from '../../src/app/settings.ts';
import { crc32, unzipStore, zipStore } from '../../src/app/zip.ts';

describe('app: zip', () => {
  it('round-trips stored entries with UTF-8 names and checks CRC-32', () => {
    expect(crc32(new TextEncoder().encode('123456789'))).toBe(0xcbf43926);
    const bytes = new Uint8Array(70_000).map((_, i) => (i * 31) & 255);
    const zip = zipStore([
      { name: 'generator/adapter_config.json', data: '{"r":8}' },
      { name: 'generator/adapter_model.safetensors', data: bytes },
      { name: 'rôle/é.txt', data: '' },
    ]);
    const files = unzipStore(zip);
    expect([...files.keys()]).toEqual(['generator/adapter_config.json', 'generator/adapter_model.safetensors', 'rôle/é.txt']);
    expect(new TextDecoder().decode(files.get('generator/adapter_config.json'))).toBe('{"r":8}');
    expect(Array.from(files.get('generator/adapter_model.safetensors')!)).toEqual(Array.from(bytes));
    expect(files.get('rôle/é.txt')!.length).toBe(0);
    const broken = zip.slice();
    const at = 30 + 'generator/adapter_config.json'.length + 2; // inside the first file's data
    broken[at] = broken[at]! ^ 0xff;
    expect(() => unzipStore(broken)).toThrow(/CRC/);
    expect(() => unzipStore(new Uint8Array(10))).toThrow(/not a zip/);
  });
});

describe('app: model URLs', () => {
  it('turns repo ids and huggingface.co URLs into resolve/ bases', () => {
    expect(modelUrlBase('Qwen/Qwen3-0.6B')).toBe('https://huggingface.co/Qwen/Qwen3-0.6B/resolve/main/');
    expect(modelUrlBase(' Qwen/Qwen3-0.6B@v1.0 ')).toBe('https://huggingface.co/Qwen/Qwen3-0.6B/resolve/v1.0/');
    expect(modelUrlBase('https://huggingface.co/Qwen/Qwen3-0.6B')).toBe('https://huggingface.co/Qwen/Qwen3-0.6B/resolve/main/');
    expect(modelUrlBase('https://huggingface.co/Qwen/Qwen3-0.6B/tree/abc123')).toBe('https://huggingface.co/Qwen/Qwen3-0.6B/resolve/abc123/');
    expect(modelUrlBase('https://example.com/models/tiny')).toBe('https://example.com/models/tiny/');
    expect(modelUrlBase('https://example.com/models/tiny/config.json')).toBe('https://example.com/models/tiny/');
    expect(() => modelUrlBase('')).toThrow(/no model/);
    expect(() => modelUrlBase('not a model')).toThrow(/neither/);
    expect(() => modelUrlBase('ftp://x/y')).toThrow(/http/);
  });
});

describe('app: settings', () => {
  it('checks settings and makes a TrainerConfig', () => {
    expect(checkSettings(DEFAULT_SETTINGS)).toEqual([]);
    const bad = checkSettings({ ...DEFAULT_SETTINGS, steps: 0, lr: -1, groupSize: 1.5 });
    expect(bad).toHaveLength(3);
    const c = trainerConfig({ ...DEFAULT_SETTINGS, workflow: 'eval-opt', policy: 'shared', loraRank: 4, loraAlpha: 8, steps: 3 }, { taskName: 'demo', modelName: 'demo-model' });
    expect(c.workflow).toBe('eval-opt');
    expect(c.policy).toBe('shared');
    expect(c.steps).toBe(3);
    expect(c.lora.rank).toBe(4);
    expect(c.lora.alpha).toBe(8);
    expect(c.lora.targets).toHaveLength(7);
    expect(c.sampling.maxNewTokens).toBe(DEFAULT_SETTINGS.maxNewTokens);
    expect(c.validation.every).toBe(DEFAULT_SETTINGS.validationEvery);
  });
});
