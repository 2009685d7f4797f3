import { describe, expect, it } from 'vitest';
import type { Gpu } from '../../src/gpu/gpu.ts';
import { LINEAR_MODULES, type LinearModule } from '../../src/model/adapter.ts';
import type { Qwen3Config } from '../../src/model/config.ts';
import { AdapterSet, DEFAULT_LORA, fullParameters, LoraAdapter, LoraError, linearShapes, peftKey } from '../../src/model/lora.ts';
import { expectedTensors, randomQwen3Weights, releaseQwen3Weights } from '../../src/model/weights.ts';
import { testGpu } from '../helpers/gpu.ts';
import { randn, relError } from '../helpers/random.ts';
import { loraApplyRef, loraBackwardRef } from '../ref/lora.ts';

// Odd sizes: q = 3·12 = 36 ≠ hidden 30, kv = 12, intermediate 45.
const MODEL: Qwen3Config = {
  hiddenSize: 30, intermediateSize: 45, numLayers: 2, numHeads: 3, numKvHeads: 1, headDim: 12, rmsNormEps: 1e-6, ropeTheta: 1e4,
  tieWordEmbeddings: true, vocabSize: 64, maxPositionEmbeddings: 64, bosTokenId: null, eosTokenIds: [2], torchDtype: null,
};
const CFG = { rank: 5, alpha: 8, targets: [...LINEAR_MODULES] };

async function readPair(gpu: Gpu, a: LoraAdapter, layer: number, m: LinearModule) {
  const p = a.pair(layer, m)!;
  return { A: await gpu.readF32(p.A), B: await gpu.readF32(p.B) };
}

describe('LoRA adapter', () => {
  it('PEFT init: A kaiming-uniform within ±1/√in, B zeros; a zero-B adapter leaves y unchanged', async () => {
    const gpu = await testGpu();
    const a = LoraAdapter.create(gpu, 'init', MODEL, CFG, { seed: 3 });
    const { A, B } = await readPair(gpu, a, 1, 'down_proj');
    const bound = 1 / Math.sqrt(45);
    expect(Math.max(...A.map(Math.abs))).toBeLessThanOrEqual(bound);
    expect(Math.max(...A.map(Math.abs))).toBeGreaterThan(0.8 * bound);
    expect(B.every((v) => v === 0)).toBe(true);
    const y0 = randn(7 * 30, 5);
    const y = gpu.upload(y0, [7, 30], 'f32', 'y');
    a.apply(gpu, 1, 'down_proj', gpu.upload(randn(7 * 45, 6), [7, 45], 'f32', 'x'), y);
    expect(Array.from(await gpu.readF32(y))).toEqual(Array.from(y0));
    expect(a.scale).toBe(8 / 5);
    expect(DEFAULT_LORA.rank / DEFAULT_LORA.alpha).toBe(2);
    a.release();
  });

  for (const T of [1, 33]) {
    it(`apply and backward match the reference for every module, T=${T}`, async () => {
      const gpu = await testGpu();
      const a = LoraAdapter.create(gpu, 'gen', MODEL, CFG, { seed: 10 + T, randomB: 0.3 });
      const shapes = linearShapes(MODEL);
      for (const m of LINEAR_MODULES) {
        const s = shapes[m];
        const d = { T, in: s.in, out: s.out, r: CFG.rank };
        const { A, B } = await readPair(gpu, a, 1, m);
        const x = randn(T * s.in, 100 + T);
        const y0 = randn(T * s.out, 200 + T);
        const dy = randn(T * s.out, 300 + T);
        const dx0 = randn(T * s.in, 400 + T);
        const y = gpu.upload(y0, [T, s.out], 'f32', 'y');
        const xt = gpu.upload(x, [T, s.in], 'f32', 'x');
        a.apply(gpu, 1, m, xt, y);
        expect(relError(await gpu.readF32(y), loraApplyRef(x, A, B, y0, a.scale, d))).toBeLessThan(1e-5);
        const dxt = gpu.upload(dx0, [T, s.in], 'f32', 'dx');
        // two backward calls accumulate: gradients are 2× one call's
        a.backward(gpu, 1, m, xt, gpu.upload(dy, [T, s.out], 'f32', 'dy'), dxt);
        a.backward(gpu, 1, m, xt, gpu.upload(dy, [T, s.out], 'f32', 'dy'), null);
        const ref = loraBackwardRef(x, A, B, dy, a.scale, d);
        const p = a.pair(1, m)!;
        expect(relError(await gpu.readF32(p.dA!), ref.dA.map((v) => 2 * v))).toBeLessThan(1e-5);
        expect(relError(await gpu.readF32(p.dB!), ref.dB.map((v) => 2 * v))).toBeLessThan(1e-5);
        expect(relError(await gpu.readF32(dxt), Float64Array.from(dx0, (v, i) => v + ref.dx[i]!))).toBeLessThan(1e-5);
      }
      a.release();
    });
  }

  it('the reference backward agrees with finite differences of the reference forward', () => {
    const d = { T: 3, in: 4, out: 5, r: 2 };
    const x = Float64Array.from(randn(12, 1));
    const A = Float64Array.from(randn(8, 2));
    const B = Float64Array.from(randn(10, 3));
    const G = randn(15, 4); // loss = Σ y·G, so dL/dy = G
    const loss = (xx: Float64Array, AA: Float64Array, BB: Float64Array) => loraApplyRef(xx, AA, BB, new Float64Array(15), 1.5, d).reduce((s, v, i) => s + v * G[i]!, 0);
    const g = loraBackwardRef(x, A, B, G, 1.5, d);
    for (const [arr, grad] of [[x, g.dx], [A, g.dA], [B, g.dB]] as const) {
      for (let i = 0; i < arr.length; i++) {
        const up = Float64Array.from(arr);
        up[i]! += 1e-6;
        const dn = Float64Array.from(arr);
        dn[i]! -= 1e-6;
        const f = (v: Float64Array) => (arr === x ? loss(v, A, B) : arr === A ? loss(x, v, B) : loss(x, A, v));
        expect(Math.abs((f(up) - f(dn)) / 2e-6 - grad[i]!)).toBeLessThan(1e-6);
      }
    }
  });

  it('several adapters alive at once, and a per-row batch applies each to its rows', async () => {
    const gpu = await testGpu();
    const set = new AdapterSet();
    const gen = set.add(LoraAdapter.create(gpu, 'generator', MODEL, CFG, { seed: 1, randomB: 0.3 }));
    const ev = set.add(LoraAdapter.create(gpu, 'evaluator', MODEL, { ...CFG, targets: ['q_proj', 'v_proj'] }, { seed: 2, randomB: 0.3 }));
    expect(set.names).toEqual(['generator', 'evaluator']);
    expect(() => set.add(LoraAdapter.create(gpu, 'generator', MODEL, CFG))).toThrow(/exists already/);
    expect(() => set.get('worker')).toThrow(/no adapter worker/);
    const T = 9;
    const m: LinearModule = 'q_proj';
    const s = linearShapes(MODEL)[m];
    const d = { T, in: s.in, out: s.out, r: CFG.rank };
    const x = randn(T * s.in, 50);
    const y0 = randn(T * s.out, 51);
    const dy = randn(T * s.out, 52);
    const G = await readPair(gpu, gen, 0, m);
    const E = await readPair(gpu, ev, 0, m);
    const refGen = loraApplyRef(x, G.A, G.B, y0, gen.scale, d);
    const refEv = loraApplyRef(x, E.A, E.B, y0, ev.scale, d);
    expect(relError(refGen, refEv)).toBeGreaterThan(0.01);
    // rows interleaved: generator on 0, 2, 8; base only on 3, 4; evaluator on 1, 5, 6, 7
    const perRow = ['generator', 'evaluator', 'generator', null, null, 'evaluator', 'evaluator', 'evaluator', 'generator'];
    const rows = set.rows(perRow);
    const y = gpu.upload(y0, [T, s.out], 'f32', 'y');
    const xt = gpu.upload(x, [T, s.in], 'f32', 'x');
    rows.apply(gpu, 0, m, xt, y);
    const out = await gpu.readF32(y);
    const w = s.out;
    const pick = (v: ArrayLike<number>, ts: number[], width: number) => Float32Array.from(ts.flatMap((t) => Array.from(v).slice(t * width, (t + 1) * width)));
    const genRows = [0, 2, 8];
    const evRows = [1, 5, 6, 7];
    expect(relError(pick(out, genRows, w), pick(refGen, genRows, w))).toBeLessThan(1e-5);
    expect(Array.from(pick(out, [3, 4], w))).toEqual(Array.from(pick(y0, [3, 4], w)));
    expect(relError(pick(out, evRows, w), pick(refEv, evRows, w))).toBeLessThan(1e-5);
    // backward: each adapter's gradient comes from its rows only
    rows.backward(gpu, 0, m, xt, gpu.upload(dy, [T, s.out], 'f32', 'dy'), null);
    rows.release();
    const refG = loraBackwardRef(pick(x, genRows, s.in), G.A, G.B, pick(dy, genRows, w), gen.scale, { ...d, T: 3 });
    const refE = loraBackwardRef(pick(x, evRows, s.in), E.A, E.B, pick(dy, evRows, w), ev.scale, { ...d, T: 4 });
    expect(relError(await gpu.readF32(gen.pair(0, m)!.dA!), refG.dA)).toBeLessThan(1e-5);
    expect(relError(await gpu.readF32(ev.pair(0, m)!.dB!), refE.dB)).toBeLessThan(1e-5);
    // the evaluator adapts only q and v
    expect(ev.pair(0, 'k_proj')).toBeNull();
    expect(ev.parameters().map((p) => p.name)).toEqual([
      peftKey(0, 'q_proj', 'A'), peftKey(0, 'q_proj', 'B'), peftKey(0, 'v_proj', 'A'), peftKey(0, 'v_proj', 'B'),
      peftKey(1, 'q_proj', 'A'), peftKey(1, 'q_proj', 'B'), peftKey(1, 'v_proj', 'A'), peftKey(1, 'v_proj', 'B'),
    ]);
    expect(ev.parameters().every((p) => p.owner === ev)).toBe(true);
    expect(peftKey(3, 'up_proj', 'B')).toBe('base_model.model.model.layers.3.mlp.up_proj.lora_B.weight');
    expect(() => set.rows(['generator', 'worker'])).toThrow(LoraError);
    set.release();
  });

  it('refuses bad configs and shapes with named errors', async () => {
    const gpu = await testGpu();
    expect(() => LoraAdapter.create(gpu, 'bad', MODEL, { ...CFG, rank: 0 })).toThrow(/rank/);
    expect(() => LoraAdapter.create(gpu, 'bad', MODEL, { ...CFG, targets: ['lm_head' as LinearModule] })).toThrow(/unknown target module lm_head/);
    const a = LoraAdapter.create(gpu, 'shape', MODEL, CFG);
    const x = gpu.upload(randn(4 * 31, 1), [4, 31], 'f32', 'wideX');
    expect(() => a.apply(gpu, 0, 'q_proj', x, gpu.tensor([4, 36], 'f32', 'y'))).toThrow(/wideX/);
    a.release();
  });

  it('full-parameter mode: every base weight once, Hugging Face names, zeroed f32 grads', async () => {
    const gpu = await testGpu();
    for (const tied of [true, false]) {
      const c = { ...MODEL, tieWordEmbeddings: tied };
      const w = randomQwen3Weights(gpu, c, 9, { dtype: 'f32' });
      const params = fullParameters(gpu, w);
      expect(params.map((p) => p.name).sort()).toEqual(expectedTensors(c).map((s) => s.name).sort());
      const q = params.find((p) => p.name === 'model.layers.1.self_attn.q_proj.weight')!;
      expect(q.param).toBe(w.layers[1]!.q);
      expect(q.grad.shape).toEqual([36, 30]);
      expect(q.grad.dtype).toBe('f32');
      expect(Array.from(await gpu.readF32(q.grad)).every((g) => g === 0)).toBe(true);
      for (const p of params) p.grad.release();
      releaseQwen3Weights(w);
    }
  });
});
