// `troupe grad` as a user runs it (node bin/troupe.mjs) on the gqa-tied fixture: the loss and every LoRA
// gradient against PEFT (grad.safetensors), and errors that name the missing or corrupt file.
import { mkdtemp, readFile, rm, writeFile, mkdir, copyFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSafetensorsBytes } from '../../src/model/safetensors.ts';
import { spawnTroupe } from '../helpers/cli.ts';
import { relError } from '../helpers/random.ts';
import { FIXTURE_MODELS, readFixture } from '../helpers/tiny-qwen3.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..');
const MODEL = join(ROOT, FIXTURE_MODELS, 'gqa-tied');

describe('troupe grad', () => {
  let dir = '';
  let ref: Awaited<ReturnType<typeof readFixture>>;
  let ids: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'troupe-grad-'));
    ref = await readFixture(join(MODEL, 'grad.safetensors'));
    ids = Array.from(ref.get('ids')!.values).join(',');
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('writes d loss / d LoRA weights under PEFT names, equal to PEFT', async () => {
    const out = join(dir, 'lora-grad.safetensors');
    const r = spawnTroupe(['grad', '--model', MODEL, '--adapter', join(MODEL, 'adapter'), '--ids', ids, '--out', out]);
    expect(r.stderr.replace(/troupe: no GPU Vulkan driver.*\n/, ''), r.stderr).toBe('');
    expect(r.code).toBe(0);
    const { loss } = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { loss: number };
    const wantLoss = ref.get('loss')!.values[0]!;
    expect(Math.abs(loss - wantLoss) / wantLoss).toBeLessThan(1e-4);
    const got = readSafetensorsBytes(new Uint8Array(await readFile(out)), out).tensors;
    const loraKeys = [...ref.keys()].filter((k) => k.includes('.lora_'));
    expect([...got.keys()].sort()).toEqual(loraKeys.sort());
    for (const k of loraKeys) {
      expect(got.get(k)!.dtype, k).toBe('F32');
      expect(got.get(k)!.shape, k).toEqual(ref.get(k)!.shape);
      expect(relError(got.get(k)!.values, ref.get(k)!.values), k).toBeLessThan(1e-3);
    }
  }, 300_000);

  it('--full writes every base-weight gradient under Hugging Face names', async () => {
    const out = join(dir, 'full-grad.safetensors');
    const r = spawnTroupe(['grad', '--model', MODEL, '--full', '--ids', ids, '--out', out]);
    expect(r.code, r.stderr).toBe(0);
    const { loss } = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { loss: number };
    const wantLoss = ref.get('full_loss')!.values[0]!;
    expect(Math.abs(loss - wantLoss) / wantLoss).toBeLessThan(1e-4);
    const got = readSafetensorsBytes(new Uint8Array(await readFile(out)), out).tensors;
    const fullKeys = [...ref.keys()].filter((k) => k.startsWith('full_grad.'));
    expect([...got.keys()].sort()).toEqual(fullKeys.map((k) => k.slice('full_grad.'.length)).sort());
    for (const k of fullKeys) expect(relError(got.get(k.slice('full_grad.'.length))!.values, ref.get(k)!.values), k).toBeLessThan(1e-3);
  }, 300_000);

  it('names a missing or corrupt adapter file, and refuses bad arguments', async () => {
    const out = join(dir, 'never.safetensors');
    const missing = spawnTroupe(['grad', '--model', MODEL, '--adapter', join(dir, 'no-such-adapter'), '--ids', '1,2,3', '--out', out]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/no-such-adapter/);
    expect(missing.stderr).toMatch(/adapter_config\.json/);

    const corrupt = join(dir, 'corrupt-adapter');
    await mkdir(corrupt);
    await copyFile(join(MODEL, 'adapter', 'adapter_config.json'), join(corrupt, 'adapter_config.json'));
    await writeFile(join(corrupt, 'adapter_model.safetensors'), new Uint8Array([200, 0, 0, 0, 0, 0, 0, 0, 123, 34]));
    const bad = spawnTroupe(['grad', '--model', MODEL, '--adapter', corrupt, '--ids', '1,2,3', '--out', out]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/adapter_model\.safetensors/);

    const both = spawnTroupe(['grad', '--model', MODEL, '--adapter', corrupt, '--full', '--ids', '1,2', '--out', out]);
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/exactly one of --adapter or --full/);
    const short = spawnTroupe(['grad', '--model', MODEL, '--full', '--ids', '7', '--out', out]);
    expect(short.code).toBe(2);
    expect(short.stderr).toMatch(/at least 2 tokens/);
  }, 300_000);
});
