// CPU reference (f64) for per-row multi-LoRA (shaders/lora_rows.wgsl): y[t] += s[a]·(x[t]·A[a]ᵀ)·B[a]ᵀ,
// a = rows[t], rows[t] = NO_ADAPTER (or past the bank) leaves the row as it is.
// Reference layout (each adapter's tensors as they are): adapter a's A [rank[a], in] from a·r·in of A, its
// B [out, rank[a]] from a·out·r of B. The kernel's bank holds them transposed (the test packs them).

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

/** One adapter's tensors for the per-row references below: A [r, in], B [out, r], scale alpha / r. */
export interface RowAdapterRef {
  A: ArrayLike<number>;
  B: ArrayLike<number>;
  scale: number;
  r: number;
}

/** Per-row LoRA with each adapter's own tensors (AdapterSet.rows): row t uses adapters[rows[t]], or none when
 * rows[t] is null or that adapter lacks the module (adapters[a] null). Returns y and, for d loss / d y = dy,
 * every adapter's dA [r, in] and dB [out, r] (zeros when untouched) and dx0 + d loss / d x. */
export function loraRowsTrainRef(
  x: ArrayLike<number>,
  y: ArrayLike<number>,
  dy: ArrayLike<number>,
  dx0: ArrayLike<number>,
  rows: readonly (number | null)[],
  adapters: readonly (RowAdapterRef | null)[],
  d: { T: number; in: number; out: number },
) {
  const yOut = Float64Array.from(y);
  const dx = Float64Array.from(dx0);
  const dA = adapters.map((a) => new Float64Array(a ? a.r * d.in : 0));
  const dB = adapters.map((a) => new Float64Array(a ? d.out * a.r : 0));
  for (let t = 0; t < d.T; t++) {
    const i = rows[t];
    const a = i === null || i === undefined ? null : adapters[i];
    if (!a) continue;
    const xt = (k: number) => x[t * d.in + k]!;
    const dyt = (o: number) => dy[t * d.out + o]!;
    const u = new Float64Array(a.r); // x·Aᵀ
    const g = new Float64Array(a.r); // dy·B
    for (let j = 0; j < a.r; j++) {
      for (let k = 0; k < d.in; k++) u[j] += xt(k) * a.A[j * d.in + k]!;
      for (let o = 0; o < d.out; o++) g[j] += dyt(o) * a.B[o * a.r + j]!;
    }
    for (let o = 0; o < d.out; o++) {
      let acc = 0;
      for (let j = 0; j < a.r; j++) {
        acc += u[j]! * a.B[o * a.r + j]!;
        dB[i!]![o * a.r + j] += a.scale * dyt(o) * u[j]!;
      }
      yOut[t * d.out + o] += a.scale * acc;
    }
    for (let j = 0; j < a.r; j++) {
      for (let k = 0; k < d.in; k++) {
        dA[i!]![j * d.in + k] += a.scale * g[j]! * xt(k);
        dx[t * d.in + k] += a.scale * g[j]! * a.A[j * d.in + k]!;
      }
    }
  }
  return { y: yOut, dA, dB, dx };
}
