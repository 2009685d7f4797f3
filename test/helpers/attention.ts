// Attention test inputs: packed sequence starts and seeded q/k/v, on the CPU and uploaded.
import type { Gpu } from '../../src/gpu/gpu.ts';
import type { AttentionDims } from '../../src/kernels/attention.ts';
import { randn, relError } from './random.ts';

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

/** Each sequence's relative errors (relError) of its rows of dq, dk and dv, on their own, with a floor of 1e-2 of its
 *  dO's scale. A sequence of one token has dq = dk = 0 exactly (dS = dP − D with P = 1) and the kernels leave there
 *  what f16 dO' and v cost dP against D's f32 (1e-3 of dO's scale, measured): its floor is dO's scale. */
export function perSequenceErrors(a: Record<'dq' | 'dk' | 'dv', ArrayLike<number>>, b: Record<'dq' | 'dk' | 'dv', ArrayLike<number>>, st: number[], mags: number[], d: { nHeads: number; nKv: number; headDim: number }) {
  return mags.map((mag, s) => {
    const errors = { dq: 0, dk: 0, dv: 0 };
    for (const name of ['dq', 'dk', 'dv'] as const) {
      const width = (name === 'dq' ? d.nHeads : d.nKv) * d.headDim;
      const slice = (x: ArrayLike<number>) => Array.prototype.slice.call(x, st[s]! * width, st[s + 1]! * width) as number[];
      errors[name] = relError(slice(a[name]), slice(b[name]), (st[s + 1]! - st[s]! === 1 && name !== 'dv' ? 1 : 1e-2) * mag);
    }
    return errors;
  });
}

/** The largest of perSequenceErrors' errors. */
export const worstError = (errors: Record<string, number>[]) => Math.max(...errors.flatMap((e) => Object.values(e)));
/** perSequenceErrors' errors as dq/dk/dv per sequence. */
export const showErrors = (errors: Record<string, number>[]) => errors.map((e) => Object.values(e).map((x) => x.toExponential(1)).join('/')).join(', ');
