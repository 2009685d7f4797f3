// LoRA training in headless Chromium (WebGPU on SwiftShader): the fixture model and adapter over HTTP, the
// gradients against PEFT (grad.safetensors), 3 AdamW steps that lower the loss, and a savePeft / loadPeft
// round trip that is bit-identical.
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { relError } from '../helpers/random.ts';
import { readFixture } from '../helpers/tiny-qwen3.ts';
import { startBrowser, type Browser } from './browser.ts';
import type { TrainPageArgs, TrainPageResult } from './pages/train.ts';

const MODEL = fileURLToPath(new URL('../fixtures/models/gqa-tied/', import.meta.url));

describe('browser (Chromium): LoRA training', () => {
  let browser: Browser | undefined;
  let ref: Awaited<ReturnType<typeof readFixture>>;
  beforeAll(async () => {
    ref = await readFixture(join(MODEL, 'grad.safetensors'));
    browser = await startBrowser();
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('gradients match PEFT, AdamW steps lower the loss, the saved adapter loads back bit-identically', async () => {
    const args: TrainPageArgs = { base: '/test/fixtures/models/gqa-tied/', ids: Array.from(ref.get('ids')!.values) };
    const r = await browser!.run<TrainPageResult>('test/e2e/pages/train.ts', args);
    expect(r.runtime).toBe('browser');
    const wantLoss = ref.get('loss')!.values[0]!;
    expect(Math.abs(r.loss - wantLoss) / wantLoss).toBeLessThan(1e-4);
    const loraKeys = [...ref.keys()].filter((k) => k.includes('.lora_'));
    expect(Object.keys(r.grads).sort()).toEqual(loraKeys.sort());
    for (const k of loraKeys) expect(relError(r.grads[k]!, ref.get(k)!.values), k).toBeLessThan(1e-3);
    expect(r.losses).toHaveLength(4);
    for (let i = 1; i < r.losses.length; i++) expect(r.losses[i]!).toBeLessThan(r.losses[i - 1]!);
    expect(r.savedTensors).toBe(loraKeys.length);
    expect(r.roundTripMismatches).toBe(0);
    expect(r.savedConfig.r).toBe(8);
    expect(r.savedConfig.lora_alpha).toBe(16);
    expect(r.savedConfig.base_model_name_or_path).toBe('fixture/gqa-tied');
    expect(browser!.errors.filter((e) => !/HTTP 404 for .*model\.safetensors\.index\.json$/.test(e))).toEqual([]);
  }, 600_000);
});
