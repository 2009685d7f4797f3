// CPU reference (f64) for LoRA (src/model/lora.ts): y += s·(x·Aᵀ)·Bᵀ and its backward.
// Row-major: x [T, in], A [r, in], B [out, r], y/dy [T, out].

function mm(a: ArrayLike<number>, b: ArrayLike<number>, M: number, K: number, N: number, ta: boolean, tb: boolean): Float64Array {
  const out = new Float64Array(M * N);
  for (let i = 0; i < M; i++) {
    for (let j = 0; j < N; j++) {
      let acc = 0;
      for (let k = 0; k < K; k++) acc += a[ta ? k * M + i : i * K + k]! * b[tb ? j * K + k : k * N + j]!;
      out[i * N + j] = acc;
    }
  }
  return out;
}

export interface LoraDims {
  T: number;
  in: number;
  out: number;
  r: number;
}

export function loraApplyRef(x: ArrayLike<number>, A: ArrayLike<number>, B: ArrayLike<number>, y: ArrayLike<number>, s: number, d: LoraDims): Float64Array {
  const h = mm(x, A, d.T, d.in, d.r, false, true);
  const delta = mm(h, B, d.T, d.r, d.out, false, true);
  return Float64Array.from(y, (v, i) => v + s * delta[i]!);
}

export function loraBackwardRef(x: ArrayLike<number>, A: ArrayLike<number>, B: ArrayLike<number>, dy: ArrayLike<number>, s: number, d: LoraDims) {
  const h = mm(x, A, d.T, d.in, d.r, false, true); // [T, r]
  const dB = mm(dy, h, d.out, d.T, d.r, true, false).map((v) => s * v); // [out, r]
  const g = mm(dy, B, d.T, d.out, d.r, false, false); // [T, r]
  const dA = mm(g, x, d.r, d.T, d.in, true, false).map((v) => s * v); // [r, in]
  const dx = mm(g, A, d.T, d.r, d.in, false, false).map((v) => s * v); // [T, in]
  return { dA, dB, dx };
}
