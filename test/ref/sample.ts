// CPU reference for shaders/sample.wgsl: the same hash, threshold rule and inverse CDF in f64.
import type { SamplingRow } from '../../src/kernels/sample.ts';

function pcg(v: number): number {
  const s = (Math.imul(v >>> 0, 747796405) + 2891336453) >>> 0;
  const w = Math.imul(((s >>> ((s >>> 28) + 4)) ^ s) >>> 0, 277803737) >>> 0;
  return ((w >>> 22) ^ w) >>> 0;
}

export function uniform01Ref(seed: number, stream: number, step: number): number {
  const h = pcg((seed ^ pcg((stream ^ pcg(step)) >>> 0)) >>> 0);
  return (h >>> 8) / 16777216;
}

/** Probabilities of the distribution a row samples from (top-p truncated, renormalised). */
export function samplingDistributionRef(logits: ArrayLike<number>, row: SamplingRow): Float64Array {
  const v = logits.length;
  const z = Float64Array.from(logits, (x) => x / row.temperature);
  const m = Math.max(...z);
  const e = z.map((x) => Math.exp(x - m));
  const total = e.reduce((a, b) => a + b, 0);
  const order = [...e.keys()].sort((a, b) => e[b]! - e[a]! || a - b);
  const keep = new Uint8Array(v);
  let acc = 0;
  for (const i of order) {
    keep[i] = 1;
    acc += e[i]!;
    if (acc >= row.topP * total * (1 - 1e-7)) break;
  }
  const kept = e.reduce((a, x, i) => a + (keep[i] ? x : 0), 0);
  return e.map((x, i) => (keep[i] ? x / kept : 0));
}

export function sampleRef(logits: ArrayLike<number>, row: SamplingRow): { token: number; logprob: number } {
  const v = logits.length;
  if (row.temperature <= 0) {
    let best = 0;
    for (let i = 1; i < v; i++) if (logits[i]! > logits[best]!) best = i;
    return { token: best, logprob: logSoftmaxAt(logits, best, 1) };
  }
  const probs = samplingDistributionRef(logits, row);
  const u = uniform01Ref(row.seed, row.stream, row.step);
  let acc = 0;
  let token = -1;
  for (let i = 0; i < v; i++) {
    if (probs[i]! === 0) continue;
    acc += probs[i]!;
    token = i;
    if (acc > u) break;
  }
  return { token, logprob: logSoftmaxAt(logits, token, row.temperature) };
}

export function logSoftmaxAt(logits: ArrayLike<number>, i: number, temperature: number): number {
  const z = Array.from(logits, (x) => x / temperature);
  const m = Math.max(...z);
  return z[i]! - m - Math.log(z.reduce((a, x) => a + Math.exp(x - m), 0));
}

/** Entropy of softmax(logits / T) (T = 1 for greedy rows), in f64. */
export function entropyRef(logits: ArrayLike<number>, temperature: number): number {
  const t = temperature > 0 ? temperature : 1;
  const z = Array.from(logits, (x) => x / t);
  const m = Math.max(...z);
  const e = z.map((x) => Math.exp(x - m));
  const total = e.reduce((a, b) => a + b, 0);
  // Masked tokens (z = −inf) carry no mass: 0 · log 0 counts as 0.
  return -e.reduce((a, x, i) => a + (x > 0 ? (x / total) * (z[i]! - m - Math.log(total)) : 0), 0);
}
