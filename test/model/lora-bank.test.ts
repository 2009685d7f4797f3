// The LoRA bank against each adapter's own reference: interleaved rows, mixed ranks, adapters missing
// modules, a module no adapter targets, and re-syncing after an adapter's weights change (by its version,
// or sync for weights written without markUpdated).
import { describe, expect, it } from 'vitest';
import type { Gpu } from '../../src/gpu/gpu.ts';
import { LINEAR_MODULES, type LinearModule } from '../../src/model/adapter.ts';
import type { Qwen3Config } from '../../src/model/config.ts';
import { LoraBank } from '../../src/model/lora-bank.ts';
import { AdapterSet, LoraAdapter, LoraError, linearShapes } from '../../src/model/lora.ts';
import { testGpu } from '../helpers/gpu.ts';
import { randn, relError } from '../helpers/random.ts';
import { loraApplyRef } from '../ref/lora.ts';

// Odd sizes: q = 3·12 = 36 ≠ hidden 30, kv = 12, intermediate 45.
const MODEL: Qwen3Config = {
  hiddenSize: 30, intermediateSize: 45, numLayers: 2, numHeads: 3, numKvHeads: 1, headDim: 12, rmsNormEps: 1e-6, ropeTheta: 1e4,
  tieWordEmbeddings: true, vocabSize: 64, maxPositionEmbeddings: 64, bosTokenId: null, eosTokenIds: [2], torchDtype: null,
};
// No adapter targets up_proj; judge lacks most modules and has a smaller rank.
const ALL_BUT_UP = LINEAR_MODULES.filter((m) => m !== 'up_proj');
const ROWS = ['judge', null, 'gen', 'critic', 'gen', null, 'critic', 'judge', 'gen', 'critic', null];

function makeSet(gpu: Gpu): AdapterSet {
  const set = new AdapterSet();
  set.add(LoraAdapter.create(gpu, 'gen', MODEL, { rank: 5, alpha: 8, targets: ALL_BUT_UP }, { seed: 1, randomB: 0.3 }));
  set.add(LoraAdapter.create(gpu, 'judge', MODEL, { rank: 3, alpha: 4, targets: ['q_proj', 'down_proj'] }, { seed: 2, randomB: 0.3 }));
  set.add(LoraAdapter.create(gpu, 'critic', MODEL, { rank: 5, alpha: 16, targets: ALL_BUT_UP }, { seed: 3, randomB: 0.3 }));
  return set;
}

/** y0 with each row's own adapter applied on the CPU (null or an untargeted module: unchanged). */
async function expected(gpu: Gpu, set: AdapterSet, layer: number, m: LinearModule, x: Float32Array, y0: Float32Array): Promise<Float64Array> {
  const s = linearShapes(MODEL)[m];
  const out = Float64Array.from(y0);
  for (let t = 0; t < ROWS.length; t++) {
    const name = ROWS[t]!;
    const p = name === null ? null : set.get(name).pair(layer, m);
    if (!p) continue;
    const a = set.get(name!);
    const row = loraApplyRef(x.subarray(t * s.in, (t + 1) * s.in), await gpu.readF32(p.A), await gpu.readF32(p.B), y0.subarray(t * s.out, (t + 1) * s.out), a.scale, { T: 1, in: s.in, out: s.out, r: a.config.rank });
    out.set(row, t * s.out);
  }
  return out;
}

async function applyBank(gpu: Gpu, bank: LoraBank, layer: number, m: LinearModule, x: Float32Array, y0: Float32Array): Promise<Float32Array> {
  const s = linearShapes(MODEL)[m];
  const T = ROWS.length;
  const rows = bank.forRows(ROWS);
  const y = gpu.upload(y0, [T, s.out], 'f32', 'y');
  rows.apply(gpu, layer, m, gpu.upload(x, [T, s.in], 'f32', 'x'), y);
  rows.release();
  return gpu.readF32(y);
}

describe('LoraBank', () => {
  it('applies each row its own adapter, for every module of every layer', async () => {
    const gpu = await testGpu();
    const set = makeSet(gpu);
    const bank = new LoraBank(gpu, set);
    expect(bank.rank).toBe(5);
    expect(bank.names).toEqual(['gen', 'judge', 'critic']);
    const shapes = linearShapes(MODEL);
    for (let layer = 0; layer < MODEL.numLayers; layer++) {
      for (const m of LINEAR_MODULES) {
        const s = shapes[m];
        const x = randn(ROWS.length * s.in, 10 + layer);
        const y0 = randn(ROWS.length * s.out, 20 + layer);
        const got = await applyBank(gpu, bank, layer, m, x, y0);
        expect(relError(got, await expected(gpu, set, layer, m, x, y0))).toBeLessThan(1e-5);
        if (m === 'up_proj') expect(Array.from(got)).toEqual(Array.from(y0));
      }
    }
    bank.release();
    set.release();
  });

  it('re-copies an adapter after its weights change: by version on the next forward, or by sync', async () => {
    const gpu = await testGpu();
    const set = makeSet(gpu);
    const bank = new LoraBank(gpu, set);
    const s = linearShapes(MODEL).q_proj;
    const x = randn(ROWS.length * s.in, 30);
    const y0 = randn(ROWS.length * s.out, 31);
    const before = await expected(gpu, set, 1, 'q_proj', x, y0);
    const judge = set.get('judge').pair(1, 'q_proj')!;
    gpu.write(judge.B, randn(judge.B.size, 32, 0.5));
    const after = await expected(gpu, set, 1, 'q_proj', x, y0);
    expect(relError(after, before)).toBeGreaterThan(1e-2);
    // Written without markUpdated: the bank keeps its copy until sync.
    expect(relError(await applyBank(gpu, bank, 1, 'q_proj', x, y0), before)).toBeLessThan(1e-5);
    bank.sync('judge');
    expect(relError(await applyBank(gpu, bank, 1, 'q_proj', x, y0), after)).toBeLessThan(1e-5);
    // With markUpdated the next forward re-copies by itself.
    gpu.write(judge.B, randn(judge.B.size, 33, 0.5));
    set.get('judge').markUpdated();
    const third = await expected(gpu, set, 1, 'q_proj', x, y0);
    expect(relError(third, after)).toBeGreaterThan(1e-2);
    expect(relError(await applyBank(gpu, bank, 1, 'q_proj', x, y0), third)).toBeLessThan(1e-5);
    bank.release();
    set.release();
  });

  it('rejects unknown adapters, empty sets and use after release; tracks set changes', async () => {
    const gpu = await testGpu();
    const set = makeSet(gpu);
    const bank = new LoraBank(gpu, set);
    expect(() => bank.forRows(['gen', 'nope'])).toThrow(/no adapter nope/);
    expect(() => bank.sync('nope')).toThrow(LoraError);
    expect(() => bank.forRows([])).toThrow(/at least one row/);
    expect(() => new LoraBank(gpu, new AdapterSet())).toThrow(/empty/);
    expect(bank.matches(set)).toBe(true);
    set.add(LoraAdapter.create(gpu, 'extra', MODEL, { rank: 2, alpha: 2, targets: ['o_proj'] }, { seed: 4 }));
    expect(bank.matches(set)).toBe(false);
    bank.release();
    expect(() => bank.forRows(['gen'])).toThrow(/released/);
    set.release();
  });
});
