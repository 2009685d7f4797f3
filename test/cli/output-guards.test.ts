// What the CLI refuses instead of producing silently wrong output: token ids that would wrap in a u32
// cast or lie outside the vocabulary, NaN/Inf in weights, adapters and outputs (no file is written
// then), and output paths that cannot be written (refused before the work starts).
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { command as grad } from '../../src/cli/commands/grad.ts';
import { command as generate } from '../../src/cli/commands/generate.ts';
import { command as logits } from '../../src/cli/commands/logits.ts';
import { parseIds } from '../../src/cli/model-args.ts';
import { nextTokenBatch } from '../../src/model/backward.ts';
import { readSafetensorsBytes, writeSafetensors, type TensorData } from '../../src/model/safetensors.ts';
import { checkTokenIds, TokenIdError } from '../../src/model/token-ids.ts';
import { captureCli } from '../helpers/cli.ts';
import { FIXTURE_MODELS } from '../helpers/tiny-qwen3.ts';

const MODEL = `${FIXTURE_MODELS}/mha-untied`; // vocab 300, untied lm_head
const COMMANDS = [logits, grad, generate];

/** A copy of a fixture model directory (adapter included) whose tensors `edit` may change. */
async function copyModel(to: string, edit?: (file: string, name: string, values: Float32Array) => void): Promise<string> {
  await mkdir(join(to, 'adapter'), { recursive: true });
  for (const f of ['config.json', 'model.safetensors', 'adapter/adapter_config.json', 'adapter/adapter_model.safetensors']) {
    let bytes: Uint8Array = await readFile(join(MODEL, f));
    if (edit && f.endsWith('.safetensors')) {
      const { tensors, metadata } = readSafetensorsBytes(bytes, f);
      const out: TensorData[] = [];
      for (const [name, t] of tensors) {
        const values = Float32Array.from(t.values);
        edit(f, name, values);
        out.push({ name, dtype: t.dtype, shape: t.shape, data: values });
      }
      bytes = writeSafetensors(out, metadata, { allowNonFinite: true });
    }
    await writeFile(join(to, f), bytes);
  }
  return to;
}

describe('token ids are range-checked before any u32 cast', () => {
  it('parseIds refuses ids past 2^32 and past the vocabulary, naming id, position and vocab', () => {
    expect(parseIds('logits', '1, 2,3')).toEqual([1, 2, 3]);
    expect(() => parseIds('logits', '4294967296,1')).toThrow(/token id 4294967296 at position 0 is outside the vocabulary \[0, 4294967296\)/);
    expect(() => parseIds('logits', '5,4294967297')).toThrow(/token id 4294967297 at position 1/);
    expect(() => parseIds('logits', '1,2,300', 300)).toThrow(/token id 300 at position 2 is outside the vocabulary \[0, 300\)/);
    expect(() => parseIds('logits', '1,-2')).toThrow(/comma-separated list of token ids.*position 1/);
    expect(() => parseIds('logits', '1,2.5')).toThrow(/position 1/);
    expect(() => checkTokenIds('dataset row 7', [0, 1, 2 ** 32], 300)).toThrow(TokenIdError);
    expect(() => checkTokenIds('dataset row 7', [0, 1.5], 300)).toThrow(/dataset row 7: token id 1.5 at position 1 is not an integer/);
    // The training batch packer, where grad and the trainer turn number[] into u32.
    expect(() => nextTokenBatch([[1, 2], [3, 2 ** 32 + 1]])).toThrow(/nextTokenBatch: sequence 1: token id 4294967297 at position 1/);
    expect(nextTokenBatch([[1, 2, 3]]).ids).toEqual(Uint32Array.from([1, 2, 3]));
  });

  for (const cmd of ['logits', 'grad', 'generate'] as const) {
    it(`troupe ${cmd} refuses ids 2^32.. (they used to give the logits of 0, 1, 2) and ids >= vocab`, async () => {
      const dir = await mkdtemp(join(tmpdir(), `troupe-ids-${cmd}-`));
      try {
        const out = join(dir, 'out.bin');
        const extra = cmd === 'generate' ? ['--max-new-tokens', '1'] : cmd === 'grad' ? ['--adapter', `${MODEL}/adapter`, '--out', out] : ['--out', out];
        const wrapped = await captureCli([cmd, '--model', MODEL, '--ids', '4294967296,4294967297,4294967298', ...extra], COMMANDS);
        expect(wrapped.code).toBe(2);
        expect(wrapped.err).toMatch(/token id 4294967296 at position 0/);
        const outside = await captureCli([cmd, '--model', MODEL, '--dtype', 'f32', '--ids', '5,6,300', ...extra], COMMANDS);
        if (cmd === 'grad') {
          // grad checks the ids against the model where the model checks them (embedding / targets).
          expect(outside.code).not.toBe(0);
          expect(outside.err).toMatch(/300/);
        } else {
          expect(outside.code).toBe(2);
          expect(outside.err).toMatch(/token id 300 at position 2 is outside the vocabulary \[0, 300\) of this model/);
        }
        await expect(stat(out)).rejects.toThrow();
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    });
  }
});

describe('NaN and Inf are errors, never output', () => {
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'troupe-nonfinite-'));
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('a NaN in the weights fails the load, naming the tensor (logits used to be all NaN, exit 0)', async () => {
    const m = await copyModel(join(dir, 'nan-weights'), (f, name, v) => {
      if (f === 'model.safetensors' && name === 'model.layers.1.mlp.up_proj.weight') v[77] = NaN;
    });
    const out = join(dir, 'nan.bin');
    const r = await captureCli(['logits', '--model', m, '--dtype', 'f32', '--ids', '1,2,3', '--out', out], COMMANDS);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/model\.layers\.1\.mlp\.up_proj\.weight \[96, 48\]: 1 of 4608 elements are NaN or Inf \(first at flat index 77\)/);
    await expect(stat(out)).rejects.toThrow();
  });

  it('logits that overflow to Inf from finite weights fail, naming the position, and write nothing', async () => {
    const m = await copyModel(join(dir, 'huge-head'), (f, name, v) => {
      if (f === 'model.safetensors' && name === 'lm_head.weight') v.fill(3e38);
    });
    const out = join(dir, 'inf.bin');
    const r = await captureCli(['logits', '--model', m, '--dtype', 'f32', '--ids', '1,2,3', '--out', out], COMMANDS);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/the logits \[3, 300\]: \d+ of 900 values are NaN or Inf, the first at position 0, vocab index \d+/);
    await expect(stat(out)).rejects.toThrow();
  });

  it('a NaN in an adapter fails loadPeft, naming the tensor (grad used to print {"loss":null} and write NaN)', async () => {
    const m = await copyModel(join(dir, 'nan-adapter'), (f, name, v) => {
      if (f.startsWith('adapter/') && name.includes('layers.2') && name.endsWith('lora_B.weight')) v[3] = Infinity;
    });
    const out = join(dir, 'g.safetensors');
    const r = await captureCli(['grad', '--model', m, '--adapter', join(m, 'adapter'), '--ids', '1,2,3,4', '--out', out], COMMANDS);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/adapter_model\.safetensors.*layers\.2\..*lora_B\.weight.*NaN or Inf \(first at flat index 3\)/);
    await expect(stat(out)).rejects.toThrow();
  });

  it('a gradient that turns non-finite from finite inputs is refused, and no gradient file is written', async () => {
    const m = await copyModel(join(dir, 'huge-adapter'), (f, name, v) => {
      if (f.startsWith('adapter/')) v.fill(1e30);
    });
    const out = join(dir, 'g2.safetensors');
    const r = await captureCli(['grad', '--model', m, '--adapter', join(m, 'adapter'), '--ids', '1,2,3,4', '--out', out], COMMANDS);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/NaN or Inf/);
    expect(r.out).not.toMatch(/"loss"/);
    await expect(stat(out)).rejects.toThrow();
  });

  it('writeSafetensors refuses non-finite floats unless asked, naming the tensor', () => {
    const t: TensorData = { name: 'g', dtype: 'F32', shape: [2, 2], data: [1, NaN, 3, Infinity] };
    expect(() => writeSafetensors([t])).toThrow(/tensor g \[2,2\]: 2 of 4 values are NaN or Inf \(first at flat index 1: NaN\)/);
    expect(writeSafetensors([t], undefined, { allowNonFinite: true }).length).toBeGreaterThan(8);
  });
});

describe('output paths are checked before the work', () => {
  it('logits --out in a missing directory or onto a directory fails first, naming the path', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'troupe-outpath-'));
    try {
      // The model does not exist either: the output path is what is refused, before any loading.
      const missing = await captureCli(['logits', '--model', join(dir, 'no-model'), '--ids', '1,2', '--out', join(dir, 'nope', 'l.bin')], COMMANDS);
      expect(missing.code).toBe(1);
      expect(missing.err).toMatch(new RegExp(`output path ${join(dir, 'nope', 'l.bin')}: directory ${join(dir, 'nope')} does not exist`));
      const isDir = await captureCli(['logits', '--model', join(dir, 'no-model'), '--ids', '1,2', '--out', dir], COMMANDS);
      expect(isDir.code).toBe(1);
      expect(isDir.err).toMatch(/is a directory/);
      expect(await readdir(dir)).toEqual([]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
