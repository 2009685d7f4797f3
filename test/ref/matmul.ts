// CPU reference for src/kernels/matmul.ts: out = alpha·op(a)·op(b) (+ init), accumulated in f64.
export interface MatmulRefOptions {
  transA?: boolean;
  transB?: boolean;
  alpha?: number;
  /** Added to the product (the accumulate case). */
  init?: Float32Array;
}

export function matmulRef(a: Float32Array, b: Float32Array, M: number, N: number, K: number, o: MatmulRefOptions = {}): Float32Array {
  const out = new Float32Array(M * N);
  const alpha = o.alpha ?? 1;
  for (let m = 0; m < M; m++) {
    for (let n = 0; n < N; n++) {
      let s = 0;
      for (let k = 0; k < K; k++) {
        const av = o.transA ? a[k * M + m]! : a[m * K + k]!;
        const bv = o.transB ? b[n * K + k]! : b[k * N + n]!;
        s += av * bv;
      }
      out[m * N + n] = alpha * s + (o.init ? o.init[m * N + n]! : 0);
    }
  }
  return out;
}
