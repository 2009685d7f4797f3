// Attention test inputs: packed sequence starts and seeded q/k/v, on the CPU and uploaded.
import type { Gpu } from '../../src/gpu/gpu.ts';
import type { AttentionDims } from '../../src/kernels/attention.ts';
import { randn } from './random.ts';

/** Sequence lengths -> seqStarts [S+1]. */
export function starts(lens: number[]): number[] {
  const s = [0];
  for (const l of lens) s.push(s[s.length - 1]! + l);
  return s;
}

/** Seeded q [T, nHeads, headDim], k and v [T, nKv, headDim] (f32), with their GPU copies. */
export function uploadQkv(gpu: Gpu, T: number, d: AttentionDims, seed: number) {
  const q = randn(T * d.nHeads * d.headDim, seed, 1);
  const k = randn(T * d.nKv * d.headDim, seed + 1, 1);
  const v = randn(T * d.nKv * d.headDim, seed + 2, 1);
  return {
    q, k, v,
    tq: gpu.upload(q, [T, d.nHeads, d.headDim], 'f32', 'q'),
    tk: gpu.upload(k, [T, d.nKv, d.headDim], 'f32', 'k'),
    tv: gpu.upload(v, [T, d.nKv, d.headDim], 'f32', 'v'),
  };
}
