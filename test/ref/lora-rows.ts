// CPU reference (f64) for per-row multi-LoRA (shaders/lora_rows.wgsl): y[t] += s[a]·(x[t]·A[a]ᵀ)·B[a]ᵀ,
// a = rows[t], rows[t] = NO_ADAPTER (or past the bank) leaves the row as it is.
// Bank layout: adapter a's A [rank[a], in] from a·r·in of A, its B [out, rank[a]] from a·out·r of B.

export interface LoraRowsDims {
  T: number;
  in: number;
  out: number;
  /** The bank's slot rank (largest adapter rank). */
  r: number;
}

export function loraRowsRef(
  x: ArrayLike<number>,
  y: ArrayLike<number>,
  rows: ArrayLike<number>,
  A: ArrayLike<number>,
  B: ArrayLike<number>,
  scale: ArrayLike<number>,
  rank: ArrayLike<number>,
  d: LoraRowsDims,
): Float64Array {
  const out = Float64Array.from(y);
  const n = scale.length;
  for (let t = 0; t < d.T; t++) {
    const a = rows[t]!;
    if (a >= n) continue;
    const r = Math.min(rank[a]!, d.r);
    const u = new Float64Array(r);
    for (let j = 0; j < r; j++) {
      let acc = 0;
      for (let k = 0; k < d.in; k++) acc += x[t * d.in + k]! * A[(a * d.r + j) * d.in + k]!;
      u[j] = acc;
    }
    for (let o = 0; o < d.out; o++) {
      let acc = 0;
      for (let j = 0; j < r; j++) acc += u[j]! * B[a * d.out * d.r + o * r + j]!;
      out[t * d.out + o] += scale[a]! * acc;
    }
  }
  return out;
}
