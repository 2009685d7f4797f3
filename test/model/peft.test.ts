import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { f32ToBf16Bits, bf16BitsToF32, roundF16 } from '../../src/gpu/dtype.ts';
import type { Gpu } from '../../src/gpu/gpu.ts';
import { LINEAR_MODULES } from '../../src/model/adapter.ts';
import type { Qwen3Config } from '../../src/model/config.ts';
import { LoraAdapter, peftKey } from '../../src/model/lora.ts';
import { loadPeft, parsePeftConfig, PEFT_CONFIG_FILE, PEFT_WEIGHTS_FILE, peftConfigJson, PeftError, savePeft, writePeftDir } from '../../src/model/peft.ts';
import { Qwen3Model } from '../../src/model/qwen3.ts';
import { openSafetensors, writeSafetensors, type TensorData } from '../../src/model/safetensors.ts';
import { DirectorySource, FilesSource, MemorySource } from '../../src/model/source.ts';
import { loadQwen3 } from '../../src/model/weights.ts';
import { testGpu } from '../helpers/gpu.ts';
import { relError } from '../helpers/random.ts';

const MODEL: Qwen3Config = {
  hiddenSize: 20, intermediateSize: 28, numLayers: 2, numHeads: 2, numKvHeads: 1, headDim: 12, rmsNormEps: 1e-6, ropeTheta: 1e4,
  tieWordEmbeddings: true, vocabSize: 32, maxPositionEmbeddings: 64, bosTokenId: null, eosTokenIds: [2], torchDtype: null,
};
const CFG = { rank: 3, alpha: 5, targets: [...LINEAR_MODULES] };
const FIXTURES = 'test/fixtures/models';

async function values(gpu: Gpu, a: LoraAdapter): Promise<Map<string, Float32Array>> {
  const out = new Map<string, Float32Array>();
  for (const { layer, module, pair } of a.entries()) {
    out.set(peftKey(layer, module, 'A'), await gpu.readF32(pair.A));
    out.set(peftKey(layer, module, 'B'), await gpu.readF32(pair.B));
  }
  return out;
}

const asSource = (files: Record<string, Uint8Array | string>) => new MemorySource(files, 'adapter');

describe('PEFT save / load', () => {
  it('round trip F32 is bit-exact; config fields as PEFT writes them', async () => {
    const gpu = await testGpu();
    const a = LoraAdapter.create(gpu, 'gen', MODEL, CFG, { seed: 4, randomB: 0.5 });
    const files = await savePeft(gpu, a, { baseModel: 'Qwen/Qwen3-0.6B' });
    const cfg = JSON.parse(new TextDecoder().decode(files[PEFT_CONFIG_FILE]));
    expect(cfg.peft_type).toBe('LORA');
    expect(cfg.r).toBe(3);
    expect(cfg.lora_alpha).toBe(5);
    expect(cfg.task_type).toBe('CAUSAL_LM');
    expect(cfg.bias).toBe('none');
    expect(cfg.use_dora).toBe(false);
    expect(cfg.use_rslora).toBe(false);
    expect(cfg.fan_in_fan_out).toBe(false);
    expect(cfg.lora_dropout).toBe(0);
    expect(cfg.base_model_name_or_path).toBe('Qwen/Qwen3-0.6B');
    expect(cfg.target_modules).toEqual([...LINEAR_MODULES]);
    const loaded = await loadPeft(gpu, asSource({ ...files }), MODEL, 'gen2');
    expect(loaded.baseModel).toBe('Qwen/Qwen3-0.6B');
    expect(loaded.adapter.scale).toBe(a.scale);
    // a loaded adapter starts at a version no earlier adapter had (copies keyed on versions never go stale)
    expect(loaded.adapter.version).toBeGreaterThan(a.version);
    const before = await values(gpu, a);
    const after = await values(gpu, loaded.adapter);
    expect([...after.keys()]).toEqual([...before.keys()]);
    for (const [k, v] of before) expect(Array.from(after.get(k)!)).toEqual(Array.from(v));
    // keys are PEFT's
    const st = await openSafetensors(asSource({ ...files }), PEFT_WEIGHTS_FILE);
    expect(st.names).toContain('base_model.model.model.layers.1.mlp.down_proj.lora_B.weight');
    expect(st.info('base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight').shape).toEqual([3, 20]);
    a.release();
    loaded.adapter.release();
  });

  it('F16 and BF16 files load (rounded values)', async () => {
    const gpu = await testGpu();
    const a = LoraAdapter.create(gpu, 'half', MODEL, CFG, { seed: 5, randomB: 0.5 });
    const before = await values(gpu, a);
    const bf16 = (v: Float32Array) => v.map((x) => bf16BitsToF32(f32ToBf16Bits(x)));
    for (const [dtype, round] of [['F16', roundF16], ['BF16', bf16]] as const) {
      const loaded = await loadPeft(gpu, asSource({ ...(await savePeft(gpu, a, { dtype })) }), MODEL, `l${dtype}`);
      const after = await values(gpu, loaded.adapter);
      for (const [k, v] of before) expect(Array.from(after.get(k)!)).toEqual(Array.from(round(v)));
      loaded.adapter.release();
    }
    a.release();
  });

  it('writes a directory that a DirectorySource loads', async () => {
    const gpu = await testGpu();
    const dir = await mkdtemp(join(tmpdir(), 'troupe-peft-'));
    try {
      const a = LoraAdapter.create(gpu, 'disk', MODEL, { ...CFG, targets: ['q_proj', 'down_proj'] }, { seed: 6, randomB: 0.1 });
      await writePeftDir(join(dir, 'gen'), await savePeft(gpu, a));
      const loaded = await loadPeft(gpu, new DirectorySource(join(dir, 'gen')), MODEL, 'disk2');
      expect(loaded.lora.targets).toEqual(['q_proj', 'down_proj']);
      expect(loaded.adapter.pair(0, 'k_proj')).toBeNull();
      expect(Array.from(await gpu.readF32(loaded.adapter.pair(1, 'down_proj')!.B))).toEqual(Array.from(await gpu.readF32(a.pair(1, 'down_proj')!.B)));
      a.release();
      loaded.adapter.release();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('loads from browser File objects (as a directory picker gives them); saved bytes make a download', async () => {
    const gpu = await testGpu();
    const a = LoraAdapter.create(gpu, 'web', MODEL, CFG, { seed: 8, randomB: 0.2 });
    const files = await savePeft(gpu, a);
    const picked = Object.entries(files).map(([n, bytes]) => [n, new File([bytes as Uint8Array<ArrayBuffer>], n)] as const);
    const loaded = await loadPeft(gpu, new FilesSource(picked), MODEL, 'web2');
    expect(Array.from(await gpu.readF32(loaded.adapter.pair(0, 'o_proj')!.A))).toEqual(Array.from(await gpu.readF32(a.pair(0, 'o_proj')!.A)));
    const blob = new Blob([files[PEFT_WEIGHTS_FILE] as Uint8Array<ArrayBuffer>]);
    expect(blob.size).toBe(files[PEFT_WEIGHTS_FILE].length);
    a.release();
    loaded.adapter.release();
  });

  it('target_modules: names, dotted suffixes, "all-linear", regex', () => {
    const base = { ...peftConfigJson(CFG, null) };
    expect(parsePeftConfig({ ...base, target_modules: ['v_proj', 'self_attn.q_proj'] }).lora.targets).toEqual(['q_proj', 'v_proj']);
    expect(parsePeftConfig({ ...base, target_modules: 'all-linear' }).lora.targets).toEqual([...LINEAR_MODULES]);
    expect(parsePeftConfig({ ...base, target_modules: '.*\\.(q_proj|up_proj)' }).lora.targets).toEqual(['q_proj', 'up_proj']);
    expect(parsePeftConfig({ ...base, lora_dropout: 0.05 }).notes[0]).toMatch(/lora_dropout 0.05 ignored/);
  });

  it('refuses what troupe cannot do, naming the file and field', () => {
    const base = { ...peftConfigJson(CFG, null) };
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ use_dora: true }, /use_dora.*DoRA/],
      [{ use_rslora: true }, /use_rslora.*rsLoRA/],
      [{ rank_pattern: { q_proj: 4 } }, /rank_pattern/],
      [{ alpha_pattern: { q_proj: 4 } }, /alpha_pattern/],
      [{ bias: 'lora_only' }, /bias/],
      [{ target_modules: ['q_proj', 'lm_head'] }, /lm_head/],
      [{ target_modules: 'embed_tokens' }, /matches none/],
      [{ modules_to_save: ['lm_head'] }, /modules_to_save/],
      [{ layers_to_transform: [0] }, /layers_to_transform/],
      [{ peft_type: 'IA3' }, /peft_type.*LORA/],
      [{ fan_in_fan_out: true }, /fan_in_fan_out/],
      [{ alora_invocation_tokens: [5, 6] }, /alora_invocation_tokens.*not support/],
      [{ r: 0 }, /\br\b/],
    ];
    for (const [patch, re] of cases) {
      expect(() => parsePeftConfig({ ...base, ...patch }, 'x/adapter_config.json')).toThrow(PeftError);
      expect(() => parsePeftConfig({ ...base, ...patch }, 'x/adapter_config.json')).toThrow(re);
    }
  });

  it('refuses broken adapter directories: missing, bad JSON, missing/extra/misshapen tensors', async () => {
    const gpu = await testGpu();
    const a = LoraAdapter.create(gpu, 'src', MODEL, { ...CFG, targets: ['q_proj'] }, { seed: 7, randomB: 0.1 });
    const files = await savePeft(gpu, a);
    const cfg = files[PEFT_CONFIG_FILE];
    await expect(loadPeft(gpu, asSource({}), MODEL, 'x')).rejects.toThrow(/adapter_config.json: missing file/);
    await expect(loadPeft(gpu, asSource({ [PEFT_CONFIG_FILE]: '{"r": ' }), MODEL, 'x')).rejects.toThrow(/not valid JSON/);
    await expect(loadPeft(gpu, asSource({ [PEFT_CONFIG_FILE]: cfg, 'adapter_model.bin': new Uint8Array(8) }), MODEL, 'x')).rejects.toThrow(/pickle/);
    const tensors = async (): Promise<TensorData[]> =>
      Promise.all(a.entries().flatMap(({ layer, module, pair }) => [
        gpu.readF32(pair.A).then((d) => ({ name: peftKey(layer, module, 'A'), dtype: 'F32' as const, shape: pair.A.shape, data: d })),
        gpu.readF32(pair.B).then((d) => ({ name: peftKey(layer, module, 'B'), dtype: 'F32' as const, shape: pair.B.shape, data: d })),
      ]));
    const t = await tensors();
    const missing = writeSafetensors(t.slice(1));
    await expect(loadPeft(gpu, asSource({ [PEFT_CONFIG_FILE]: cfg, [PEFT_WEIGHTS_FILE]: missing }), MODEL, 'x')).rejects.toThrow(/missing tensor .*layers\.0\.self_attn\.q_proj\.lora_A/);
    const dora = writeSafetensors([...t, { name: 'base_model.model.model.layers.0.self_attn.q_proj.lora_magnitude_vector', dtype: 'F32', shape: [24], data: new Float32Array(24) }]);
    await expect(loadPeft(gpu, asSource({ [PEFT_CONFIG_FILE]: cfg, [PEFT_WEIGHTS_FILE]: dora }), MODEL, 'x')).rejects.toThrow(/lora_magnitude_vector/);
    const wrong = writeSafetensors([{ ...t[0]!, shape: [1, 60] }, ...t.slice(1)]);
    await expect(loadPeft(gpu, asSource({ [PEFT_CONFIG_FILE]: cfg, [PEFT_WEIGHTS_FILE]: wrong }), MODEL, 'x')).rejects.toThrow(/shape \[1,60\], expected \[3,20\]/);
    a.release();
  });
});

describe('PEFT fixture adapters (made by PEFT on the GPU machine)', () => {
  for (const name of ['gqa-tied', 'mha-untied']) {
    it(`${name}: loads, tensors equal the file, forward with the adapter matches PEFT's logits`, async () => {
      const dir = join(FIXTURES, name);
      if (!existsSync(join(dir, 'adapter', PEFT_CONFIG_FILE))) throw new Error(`fixture ${dir}/adapter missing: run test/fixtures/gen/make_fixtures.py`);
      const gpu = await testGpu();
      const { config, weights } = await loadQwen3(gpu, new DirectorySource(dir), { dtype: 'f32' });
      const src = new DirectorySource(join(dir, 'adapter'));
      const peft = await loadPeft(gpu, src, config, name);
      expect(peft.lora.rank).toBe(8);
      expect(peft.adapter.scale).toBe(2);
      expect(peft.lora.targets).toEqual([...LINEAR_MODULES]);
      const st = await openSafetensors(src, PEFT_WEIGHTS_FILE);
      const got = await values(gpu, peft.adapter);
      expect(got.size).toBe(st.names.length);
      for (const k of st.names) expect(Array.from(got.get(k)!)).toEqual(Array.from(await st.readF32(k)));
      const grad = await openSafetensors(new DirectorySource(dir), 'grad.safetensors');
      const ids = Uint32Array.from(await grad.readInts('ids'));
      const model = new Qwen3Model(gpu, config, weights);
      const logits = model.forward({ ids, seqLens: [ids.length] }, { adapter: peft.adapter });
      expect(relError(await gpu.readF32(logits), await grad.readF32('logits'))).toBeLessThan(1e-3);
      // and without it the logits differ: the adapter matters
      const plain = model.forward({ ids, seqLens: [ids.length] });
      expect(relError(await gpu.readF32(plain), await grad.readF32('logits'))).toBeGreaterThan(1e-2);
      peft.adapter.release();
    });
  }
});
