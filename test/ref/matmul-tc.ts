// CPU reference of the tensor-core matmul (src/kernels/matmul-tc.ts): the scales of shaders/absmax_scale.wgsl
// and the f16 copies of op(a) and op(b) the kernel multiplies, so a GPU result differs from
// matmulRef(tcInputs(...)) only by f32 accumulation order.
import { roundF16 } from '../../src/gpu/dtype.ts';

/** 2^(15 - e) for a row maximum m = f·2^e, f in [0.5, 1): brings m into [2^14, 2^15). 1 for 0 or non-finite m. */
export function absmaxScaleRef(m: number): number {
  if (m === 0 || !Number.isFinite(m)) return 1;
  let e = Math.floor(Math.log2(m)) + 1;
  if (m >= 2 ** e) e++;
  if (m < 2 ** (e - 1)) e--;
  return 2 ** Math.min(126, Math.max(-126, 15 - e));
}

/** Scales of the R rows of x seen as [R, L]; strided: row i is column i of a stored [L, R]. */
export function absmaxScalesRef(x: Float32Array, R: number, L: number, strided: boolean): Float32Array {
  const out = new Float32Array(R);
  for (let i = 0; i < R; i++) {
    let m = 0;
    for (let l = 0; l < L; l++) m = Math.max(m, Math.abs(strided ? x[l * R + i]! : x[i * L + l]!));
    out[i] = absmaxScaleRef(m);
  }
  return out;
}

/** x's entries as the kernel sees them: scaled (f32 operands), rounded to f16, scaled back. */
export function tcOperandRef(x: Float32Array, R: number, L: number, strided: boolean, f32: boolean): Float32Array {
  if (!f32) return roundF16(x);
  const s = absmaxScalesRef(x, R, L, strided);
  const out = new Float32Array(x.length);
  for (let i = 0; i < R; i++) {
    for (let l = 0; l < L; l++) {
      const j = strided ? l * R + i : i * L + l;
      out[j] = x[j]! * s[i]!;
    }
  }
  const r = roundF16(out);
  for (let i = 0; i < R; i++) for (let l = 0; l < L; l++) {
    const j = strided ? l * R + i : i * L + l;
    r[j] = r[j]! / s[i]!;
  }
  return r;
}
