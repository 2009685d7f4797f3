// AdapterSet.rows, the one per-row LoRA path of rollouts and training: forward (lora_rows over the set's
// bank) and backward (gather each adapter's rows, its matmuls, scatter-add d x) against the CPU reference
// (f64) and against each adapter run by itself on its own rows. Shuffled rows, three adapters of different
// ranks (one missing most modules), base-only rows, odd shapes; versions: changed weights re-sync by
// themselves after markUpdated or an optimizer step, with no sync call.
// Tolerance: elementwise |got − want| <= 1e-5·|want| + 1e-6·max|want| (f32 sums of at most 45 terms).
import { describe, expect, it } from 'vitest';
import type { Gpu } from '../../src/gpu/gpu.ts';
import type { Tensor } from '../../src/gpu/tensor.ts';
import { LINEAR_MODULES, type LinearModule } from '../../src/model/adapter.ts';
import type { Qwen3Config } from '../../src/model/config.ts';
import { AdapterSet, LoraAdapter, LoraError, linearShapes } from '../../src/model/lora.ts';
import { AdamW } from '../../src/optim/adamw.ts';
import { testGpu } from '../helpers/gpu.ts';
import { maxAbs, mixedError, randn, rng } from '../helpers/random.ts';
import { loraRowsTrainRef, type RowAdapterRef } from '../ref/lora-rows.ts';

// Odd sizes: q = 3·12 = 36 ≠ hidden 30, kv = 12, intermediate 45.
const MODEL: Qwen3Config = {
  hiddenSize: 30, intermediateSize: 45, numLayers: 2, numHeads: 3, numKvHeads: 1, headDim: 12, rmsNormEps: 1e-6, ropeTheta: 1e4,
  tieWordEmbeddings: true, vocabSize: 64, maxPositionEmbeddings: 64, bosTokenId: null, eosTokenIds: [2], torchDtype: null,
};
const NAMES = ['gen', 'judge', 'critic'] as const;
// No adapter targets up_proj; judge lacks most modules and has a smaller rank, critic a larger one.
const ALL_BUT_UP = LINEAR_MODULES.filter((m) => m !== 'up_proj');

function makeSet(gpu: Gpu): AdapterSet {
  const set = new AdapterSet();
  set.add(LoraAdapter.create(gpu, 'gen', MODEL, { rank: 5, alpha: 8, targets: ALL_BUT_UP }, { seed: 1, randomB: 0.3 }));
  set.add(LoraAdapter.create(gpu, 'judge', MODEL, { rank: 3, alpha: 4, targets: ['q_proj', 'down_proj'] }, { seed: 2, randomB: 0.3 }));
  set.add(LoraAdapter.create(gpu, 'critic', MODEL, { rank: 7, alpha: 16, targets: ALL_BUT_UP }, { seed: 3, randomB: 0.3 }));
  return set;
}

/** T rows, each one of the adapters or null, in a seeded shuffled order (every adapter and null present). */
function shuffledRows(T: number, seed: number): (string | null)[] {
  const r = rng(seed);
  const pool = [...NAMES, null];
  const rows = Array.from({ length: T }, (_, t) => pool[t % pool.length]!);
  for (let i = T - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [rows[i], rows[j]] = [rows[j]!, rows[i]!];
  }
  return rows;
}

const close = (got: ArrayLike<number>, want: ArrayLike<number>) => mixedError(got, want, 1e-5, 1e-6 * Math.max(maxAbs(want), 1e-30));

function zeroGrads(gpu: Gpu, set: AdapterSet): void {
  for (const n of set.names) for (const p of set.get(n).parameters()) gpu.write(p.grad, new Float32Array(p.grad.size));
}

async function refAdapters(gpu: Gpu, set: AdapterSet, layer: number, m: LinearModule): Promise<(RowAdapterRef | null)[]> {
  const out: (RowAdapterRef | null)[] = [];
  for (const n of NAMES) {
    const a = set.get(n);
    const p = a.pair(layer, m);
    out.push(p ? { A: await gpu.readF32(p.A), B: await gpu.readF32(p.B), scale: a.scale, r: a.config.rank } : null);
  }
  return out;
}

interface Inputs {
  x: Float32Array;
  y0: Float32Array;
  dy: Float32Array;
  dx0: Float32Array;
}

function inputs(T: number, m: LinearModule, seed: number): Inputs {
  const s = linearShapes(MODEL)[m];
  return { x: randn(T * s.in, seed), y0: randn(T * s.out, seed + 1), dy: randn(T * s.out, seed + 2), dx0: randn(T * s.in, seed + 3) };
}

/** rows.apply then rows.backward on fresh tensors; y, dx, and every adapter's (dA, dB) of (layer, m). */
async function runRows(gpu: Gpu, set: AdapterSet, rowNames: (string | null)[], layer: number, m: LinearModule, v: Inputs) {
  const s = linearShapes(MODEL)[m];
  const T = rowNames.length;
  const rows = set.rows(rowNames);
  const x = gpu.upload(v.x, [T, s.in], 'f32', 'x');
  const y = gpu.upload(v.y0, [T, s.out], 'f32', 'y');
  const dx = gpu.upload(v.dx0, [T, s.in], 'f32', 'dx');
  rows.apply(gpu, layer, m, x, y);
  rows.backward(gpu, layer, m, x, gpu.upload(v.dy, [T, s.out], 'f32', 'dy'), dx);
  rows.release();
  const grads: ({ dA: Float32Array; dB: Float32Array } | null)[] = [];
  for (const n of NAMES) {
    const p = set.get(n).pair(layer, m);
    grads.push(p ? { dA: await gpu.readF32(p.dA!), dB: await gpu.readF32(p.dB!) } : null);
  }
  return { y: await gpu.readF32(y), dx: await gpu.readF32(dx), grads };
}

describe('AdapterSet.rows: one per-row LoRA path for rollouts and training', () => {
  for (const T of [1, 13, 70]) {
    it(`forward and backward match the CPU reference for every module, ${T} shuffled rows`, async () => {
      const gpu = await testGpu();
      const set = makeSet(gpu);
      const rowNames = T === 1 ? ['critic'] : shuffledRows(T, 40 + T);
      const slot = rowNames.map((n) => (n === null ? null : NAMES.indexOf(n as (typeof NAMES)[number])));
      const shapes = linearShapes(MODEL);
      let worst = 0;
      for (const layer of [0, 1]) {
        for (const m of LINEAR_MODULES) {
          zeroGrads(gpu, set);
          const s = shapes[m];
          const v = inputs(T, m, 100 * layer + LINEAR_MODULES.indexOf(m) + T);
          const got = await runRows(gpu, set, rowNames, layer, m, v);
          const ref = loraRowsTrainRef(v.x, v.y0, v.dy, v.dx0, slot, await refAdapters(gpu, set, layer, m), { T, in: s.in, out: s.out });
          worst = Math.max(worst, close(got.y, ref.y), close(got.dx, ref.dx));
          got.grads.forEach((g, i) => {
            if (!g) return;
            worst = Math.max(worst, close(g.dA, ref.dA[i]!), close(g.dB, ref.dB[i]!));
            // an adapter without rows in the batch gets no gradient
            if (!slot.includes(i)) expect(maxAbs(g.dA) + maxAbs(g.dB)).toBe(0);
          });
          if (m === 'up_proj') expect(Array.from(got.y)).toEqual(Array.from(v.y0));
        }
      }
      expect(worst).toBeLessThanOrEqual(1);
      set.release();
    });
  }

  it('equals each adapter run by itself on its own rows (forward, dA, dB, dx)', async () => {
    const gpu = await testGpu();
    const set = makeSet(gpu);
    const rowNames = shuffledRows(17, 7);
    for (const m of ['q_proj', 'down_proj', 'v_proj'] as LinearModule[]) {
      zeroGrads(gpu, set);
      const s = linearShapes(MODEL)[m];
      const v = inputs(17, m, 300);
      const got = await runRows(gpu, set, rowNames, 1, m, v);
      zeroGrads(gpu, set);
      const wantY = Float32Array.from(v.y0);
      const wantDx = Float32Array.from(v.dx0);
      for (const n of NAMES) {
        const a = set.get(n);
        const idx = rowNames.flatMap((r, t) => (r === n ? [t] : []));
        const pick = (src: Float32Array, w: number) => Float32Array.from(idx.flatMap((t) => Array.from(src.subarray(t * w, (t + 1) * w))));
        const x = gpu.upload(pick(v.x, s.in), [idx.length, s.in], 'f32', 'x');
        const y = gpu.upload(pick(v.y0, s.out), [idx.length, s.out], 'f32', 'y');
        const dx = gpu.upload(new Float32Array(idx.length * s.in), [idx.length, s.in], 'f32', 'dx');
        a.apply(gpu, 1, m, x, y);
        a.backward(gpu, 1, m, x, gpu.upload(pick(v.dy, s.out), [idx.length, s.out], 'f32', 'dy'), dx);
        const [yv, dxv] = [await gpu.readF32(y), await gpu.readF32(dx)];
        idx.forEach((t, k) => {
          wantY.set(yv.subarray(k * s.out, (k + 1) * s.out), t * s.out);
          for (let i = 0; i < s.in; i++) wantDx[t * s.in + i]! += dxv[k * s.in + i]!;
        });
        const p = a.pair(1, m);
        const g = got.grads[NAMES.indexOf(n)];
        if (p) {
          expect(close(g!.dA, await gpu.readF32(p.dA!)), `${n} ${m} dA`).toBeLessThanOrEqual(1);
          expect(close(g!.dB, await gpu.readF32(p.dB!)), `${n} ${m} dB`).toBeLessThanOrEqual(1);
        }
      }
      expect(close(got.y, wantY), `${m} y`).toBeLessThanOrEqual(1);
      expect(close(got.dx, wantDx), `${m} dx`).toBeLessThanOrEqual(1);
    }
    set.release();
  });

  it('one adapter over every row is the adapter itself; base-only rows change nothing', async () => {
    const gpu = await testGpu();
    const set = makeSet(gpu);
    const m: LinearModule = 'o_proj';
    const s = linearShapes(MODEL)[m];
    const T = 9;
    const v = inputs(T, m, 500);
    zeroGrads(gpu, set);
    const got = await runRows(gpu, set, new Array(T).fill('gen'), 0, m, v);
    zeroGrads(gpu, set);
    const gen = set.get('gen');
    const x = gpu.upload(v.x, [T, s.in], 'f32', 'x');
    const y = gpu.upload(v.y0, [T, s.out], 'f32', 'y');
    const dx = gpu.upload(v.dx0, [T, s.in], 'f32', 'dx');
    gen.apply(gpu, 0, m, x, y);
    gen.backward(gpu, 0, m, x, gpu.upload(v.dy, [T, s.out], 'f32', 'dy'), dx);
    expect(close(got.y, await gpu.readF32(y))).toBeLessThanOrEqual(1);
    expect(Array.from(got.dx)).toEqual(Array.from(await gpu.readF32(dx))); // the same kernels: bit-identical
    expect(Array.from(got.grads[0]!.dA)).toEqual(Array.from(await gpu.readF32(gen.pair(0, m)!.dA!)));
    // all rows base-only: y and dx untouched
    const none = await runRows(gpu, set, new Array(T).fill(null), 0, m, v);
    expect(Array.from(none.y)).toEqual(Array.from(v.y0));
    expect(Array.from(none.dx)).toEqual(Array.from(v.dx0));
    set.release();
  });

  it('re-syncs an adapter whose weights changed: markUpdated, or an optimizer step, no sync call', async () => {
    const gpu = await testGpu();
    const set = makeSet(gpu);
    const rowNames = shuffledRows(11, 9);
    const m: LinearModule = 'q_proj';
    const s = linearShapes(MODEL)[m];
    const v = inputs(11, m, 600);
    const slot = rowNames.map((n) => (n === null ? null : NAMES.indexOf(n as (typeof NAMES)[number])));
    const forward = async () => (await runRows(gpu, set, rowNames, 1, m, v)).y;
    const expected = async () => loraRowsTrainRef(v.x, v.y0, v.dy, v.dx0, slot, await refAdapters(gpu, set, 1, m), { T: 11, in: s.in, out: s.out }).y;
    expect(close(await forward(), await expected())).toBeLessThanOrEqual(1);
    const judge = set.get('judge');
    const v0 = judge.version;
    gpu.write(judge.pair(1, m)!.B, randn(judge.pair(1, m)!.B.size, 601, 0.5));
    judge.markUpdated();
    expect(judge.version).not.toBe(v0);
    expect(close(await forward(), await expected())).toBeLessThanOrEqual(1);
    // An AdamW step on the critic's gradients bumps its version; the next forward uses the new weights.
    const critic = set.get('critic');
    const opt = new AdamW(gpu, critic.parameters(), { lr: 0.05, weightDecay: 0 });
    const before = await expected();
    const v1 = critic.version;
    await opt.step();
    expect(critic.version).not.toBe(v1);
    const after = await expected();
    expect(close(after, before)).toBeGreaterThan(1e3);
    expect(close(await forward(), after)).toBeLessThanOrEqual(1);
    opt.release();
    set.release();
  });

  it('refuses unknown adapters, empty batches, wrong row counts and use after release', async () => {
    const gpu = await testGpu();
    const set = makeSet(gpu);
    expect(() => set.rows(['gen', 'nope'])).toThrow(/no adapter nope/);
    expect(() => set.rows([])).toThrow(/at least one row/);
    const rows = set.rows(['gen', null, 'judge']);
    const s = linearShapes(MODEL).q_proj;
    const x: Tensor = gpu.upload(randn(4 * s.in, 1), [4, s.in], 'f32', 'fourRows');
    expect(() => rows.apply(gpu, 0, 'q_proj', x, gpu.tensor([4, s.out], 'f32', 'y'))).toThrow(/fourRows has 4 rows/);
    rows.release();
    expect(() => rows.apply(gpu, 0, 'q_proj', x, gpu.tensor([4, s.out], 'f32', 'y'))).toThrow(LoraError);
    // the set's bank follows its membership: a new adapter is usable at once
    set.add(LoraAdapter.create(gpu, 'extra', MODEL, { rank: 2, alpha: 2, targets: ['o_proj'] }, { seed: 4 }));
    set.rows(['extra', 'gen']).release();
    set.release();
  });
});
