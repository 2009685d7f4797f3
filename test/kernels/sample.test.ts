import { describe, expect, it } from 'vitest';
import { readPackedSample, SAMPLE_CHUNK, type SamplingRow, sampleTokens, sampleTokensPacked } from '../../src/kernels/sample.ts';
import { embedding } from '../../src/kernels/embedding.ts';
import { testGpu } from '../helpers/gpu.ts';
import { randn } from '../helpers/random.ts';
import { entropyRef, logSoftmaxAt, sampleRef, samplingDistributionRef } from '../ref/sample.ts';

async function runRows(logits: Float32Array, vocab: number, rows: SamplingRow[]) {
  const gpu = await testGpu();
  const t = gpu.upload(logits, [rows.length, vocab], 'f32', 'logits');
  const out = sampleTokens(gpu, t, rows);
  const tokens = (await gpu.read(out.tokens)) as Uint32Array;
  const logprobs = await gpu.readF32(out.logprobs);
  const entropies = await gpu.readF32(out.entropies);
  for (const x of [t, out.tokens, out.logprobs, out.entropies]) x.release();
  return { tokens, logprobs, entropies };
}

describe('sample', () => {
  for (const vocab of [1, 7, 300, 1000, 5003, 20011]) {
    it(`matches the CPU reference, vocab ${vocab}`, async () => {
      const rows: SamplingRow[] = [];
      const configs = [
        { temperature: 0, topP: 1 },
        { temperature: 1, topP: 1 },
        { temperature: 0.7, topP: 1 },
        { temperature: 0.7, topP: 0.9 },
        { temperature: 1.3, topP: 0.5 },
        { temperature: 0.5, topP: 0.05 },
      ];
      for (let i = 0; i < 12; i++) rows.push({ ...configs[i % configs.length]!, seed: 1234 + i, stream: i % 3, step: 7 * i });
      const logits = randn(rows.length * vocab, vocab, 3);
      const { tokens, logprobs, entropies } = await runRows(logits, vocab, rows);
      rows.forEach((row, r) => {
        const ref = sampleRef(logits.subarray(r * vocab, (r + 1) * vocab), row);
        expect(tokens[r]).toBe(ref.token);
        const h = entropyRef(logits.subarray(r * vocab, (r + 1) * vocab), row.temperature);
        expect(Math.abs(entropies[r]! - h)).toBeLessThan(1e-4 * Math.max(1, h));
        expect(Math.abs(logprobs[r]! - ref.logprob)).toBeLessThan(1e-4 * Math.max(1, Math.abs(ref.logprob)));
      });
    });
  }

  it('rows of several chunks with masked tokens (a whole chunk of them too) match the CPU reference', async () => {
    const vocab = 3 * SAMPLE_CHUNK + 77;
    const rows: SamplingRow[] = [0, 1, 0.8, 1.7, 0.6, 1].map((temperature, i) => ({ temperature, topP: 1, seed: 900 + i, stream: i, step: 5 * i }));
    const logits = randn(rows.length * vocab, vocab, 11);
    for (let r = 0; r < rows.length; r++) {
      const row = logits.subarray(r * vocab, (r + 1) * vocab);
      row.fill(-Infinity, SAMPLE_CHUNK, 2 * SAMPLE_CHUNK);  // chunk 1 all masked
      for (let i = r; i < vocab; i += 7) row[i] = -Infinity;
    }
    const { tokens, logprobs, entropies } = await runRows(logits, vocab, rows);
    rows.forEach((row, r) => {
      const l = logits.subarray(r * vocab, (r + 1) * vocab);
      const ref = sampleRef(l, row);
      expect(tokens[r]).toBe(ref.token);
      expect(Number.isFinite(l[ref.token]!)).toBe(true);
      const h = entropyRef(l, row.temperature);
      expect(Math.abs(entropies[r]! - h)).toBeLessThan(1e-4 * Math.max(1, h));
      expect(Math.abs(logprobs[r]! - ref.logprob)).toBeLessThan(1e-4 * Math.max(1, Math.abs(ref.logprob)));
    });
  });

  it('draws follow the distribution when its mass spreads over several chunks (chi-square, top-p 1)', async () => {
    const vocab = 2 * SAMPLE_CHUNK + 100;
    // Twelve tokens carry the mass, in each of the three chunks and on both sides of a chunk boundary.
    const at = [3, 700, SAMPLE_CHUNK - 1, SAMPLE_CHUNK, SAMPLE_CHUNK + 1, SAMPLE_CHUNK + 999, 2 * SAMPLE_CHUNK - 2, 2 * SAMPLE_CHUNK, 2 * SAMPLE_CHUNK + 5, 2 * SAMPLE_CHUNK + 50, 2 * SAMPLE_CHUNK + 98, 2 * SAMPLE_CHUNK + 99];
    const weights = randn(at.length, 123, 1);
    const base = new Float32Array(vocab).fill(-Infinity);
    at.forEach((i, k) => (base[i] = weights[k]!));
    const n = 400;
    const logits = new Float32Array(n * vocab);
    const rows: SamplingRow[] = [];
    for (let i = 0; i < n; i++) {
      logits.set(base, i * vocab);
      rows.push({ temperature: 1.2, topP: 1, seed: 7, stream: 1, step: i });
    }
    const { tokens } = await runRows(logits, vocab, rows);
    const probs = samplingDistributionRef(base, rows[0]!);
    const counts = new Map<number, number>();
    for (const t of tokens) counts.set(t, (counts.get(t) ?? 0) + 1);
    for (const t of counts.keys()) expect(at).toContain(t);
    let chi = 0;
    for (const i of at) {
      const e = probs[i]! * n;
      chi += ((counts.get(i) ?? 0) - e) ** 2 / e;
    }
    // p < 0.001 critical value for 11 degrees of freedom is 31.3
    expect(chi).toBeLessThan(32);
  });

  it('draws follow the top-p distribution (chi-square)', async () => {
    const vocab = 12;
    const base = randn(vocab, 99, 1);
    const n = 800;
    const rows: SamplingRow[] = [];
    const logits = new Float32Array(n * vocab);
    for (let i = 0; i < n; i++) {
      logits.set(base, i * vocab);
      rows.push({ temperature: 1.5, topP: 0.9, seed: 42, stream: 0, step: i });
    }
    const { tokens } = await runRows(logits, vocab, rows);
    const probs = samplingDistributionRef(base, rows[0]!);
    const counts = new Array(vocab).fill(0);
    for (const t of tokens) counts[t]++;
    let chi = 0;
    let dof = -1;
    for (let i = 0; i < vocab; i++) {
      if (probs[i] === 0) {
        expect(counts[i]).toBe(0);
        continue;
      }
      const e = probs[i]! * n;
      chi += (counts[i] - e) ** 2 / e;
      dof++;
    }
    // p < 0.001 critical value for up to 11 degrees of freedom is below 32
    expect(dof).toBeGreaterThan(4);
    expect(chi).toBeLessThan(32);
  });

  it('a row draws the same token whatever else is in the batch', async () => {
    const vocab = 257;
    const mine = randn(vocab, 5, 2);
    const row: SamplingRow = { temperature: 1, topP: 0.95, seed: 77, stream: 2, step: 11 };
    const alone = await runRows(mine, vocab, [row]);
    const others = randn(5 * vocab, 6, 2);
    const mixed = new Float32Array(6 * vocab);
    mixed.set(others.subarray(0, 3 * vocab), 0);
    mixed.set(mine, 3 * vocab);
    mixed.set(others.subarray(3 * vocab), 4 * vocab);
    const rows: SamplingRow[] = [0, 1, 2, 3, 4, 5].map((i) => (i === 3 ? row : { temperature: 0.9, topP: 1, seed: i, stream: 0, step: i }));
    const batch = await runRows(mixed, vocab, rows);
    expect(batch.tokens[3]).toBe(alone.tokens[0]);
    expect(batch.logprobs[3]).toBe(alone.logprobs[0]);
  });

  it('greedy picks the lowest index among ties, with log-prob at T=1', async () => {
    const logits = Float32Array.from([0.5, 2, -1, 2, 0.25]);
    const { tokens, logprobs } = await runRows(logits, 5, [{ temperature: 0, topP: 1, seed: 0, stream: 0, step: 0 }]);
    expect(tokens[0]).toBe(1);
    expect(logprobs[0]).toBeCloseTo(logSoftmaxAt(logits, 1, 1), 5);
  });

  it('rejects bad sampling parameters', async () => {
    const gpu = await testGpu();
    const t = gpu.upload(randn(4, 1), [1, 4], 'f32', 'logits');
    expect(() => sampleTokens(gpu, t, [{ temperature: 1, topP: 0, seed: 0, stream: 0, step: 0 }])).toThrow(/top_p/);
    expect(() => sampleTokens(gpu, t, [{ temperature: -1, topP: 1, seed: 0, stream: 0, step: 0 }])).toThrow(/temperature/);
    expect(() => sampleTokens(gpu, t, [])).toThrow(/expected \[0, vocab\]/);
  });
});

describe('sample, packed output', () => {
  for (const n of [1, 5, 70]) {
    it(`one buffer, one read: the same ids, log-probs and entropies as the three-tensor path (${n} rows)`, async () => {
      const gpu = await testGpu();
      const vocab = 301;
      const rows: SamplingRow[] = Array.from({ length: n }, (_, i) => ({ temperature: [0, 1, 0.7][i % 3]!, topP: [1, 0.9][i % 2]!, seed: 77 + i, stream: i % 4, step: 3 * i }));
      const logits = randn(n * vocab, 500 + n, 2);
      const want = await runRows(logits, vocab, rows);
      const t = gpu.upload(logits, [n, vocab], 'f32', 'logits');
      const s = sampleTokensPacked(gpu, t, rows);
      expect(s.stride).toBeGreaterThanOrEqual(n);
      expect((s.stride * 4) % gpu.limits.minStorageBufferOffsetAlignment).toBe(0);
      // The ids stay usable on the GPU (here: gathering rows of a table by them, as the next forward's embedding does).
      const table = gpu.upload(randn(vocab * 3, 9), [vocab, 3], 'f32', 'table');
      const gathered = embedding(gpu, table, s.tokens);
      const got = await readPackedSample(gpu, s);
      expect(Array.from(got.tokens)).toEqual(Array.from(want.tokens));
      expect(Array.from(got.logprobs)).toEqual(Array.from(want.logprobs));
      expect(Array.from(got.entropies)).toEqual(Array.from(want.entropies));
      const tab = await gpu.readF32(table);
      const g = await gpu.readF32(gathered);
      Array.from(want.tokens).forEach((id, r) => expect(Array.from(g.subarray(3 * r, 3 * r + 3))).toEqual(Array.from(tab.subarray(3 * id, 3 * id + 3))));
      for (const x of [t, s.packed, table, gathered]) x.release();
    });
  }
});
