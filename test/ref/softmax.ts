// CPU references for shaders/softmax.wgsl (f64 math).
export function softmaxRef(x: Float32Array, rows: number, n: number): Float32Array {
  const y = new Float32Array(rows * n);
  for (let r = 0; r < rows; r++) {
    let m = -Infinity;
    for (let i = 0; i < n; i++) m = Math.max(m, x[r * n + i]!);
    let s = 0;
    for (let i = 0; i < n; i++) s += Math.exp(x[r * n + i]! - m);
    for (let i = 0; i < n; i++) y[r * n + i] = Math.exp(x[r * n + i]! - m) / s;
  }
  return y;
}

/** dx = y ⊙ (dy − Σ dy·y) per row. */
export function softmaxBackwardRef(y: Float32Array, dy: Float32Array, rows: number, n: number): Float32Array {
  const dx = new Float32Array(rows * n);
  for (let r = 0; r < rows; r++) {
    let d = 0;
    for (let i = 0; i < n; i++) d += dy[r * n + i]! * y[r * n + i]!;
    for (let i = 0; i < n; i++) dx[r * n + i] = y[r * n + i]! * (dy[r * n + i]! - d);
  }
  return dx;
}
