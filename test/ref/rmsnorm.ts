// CPU reference for shaders/rmsnorm.wgsl (f64): rows of n with an [n] weight.
export function rmsnormRef(x: ArrayLike<number>, w: ArrayLike<number>, eps: number): { y: Float64Array; rstd: Float64Array } {
  const n = w.length;
  const rows = x.length / n;
  const y = new Float64Array(x.length);
  const rstd = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    let ss = 0;
    for (let i = 0; i < n; i++) ss += x[r * n + i]! ** 2;
    const s = 1 / Math.sqrt(ss / n + eps);
    rstd[r] = s;
    for (let i = 0; i < n; i++) y[r * n + i] = w[i]! * x[r * n + i]! * s;
  }
  return { y, rstd };
}

/** Analytic backward: dx and dw for upstream dy. */
export function rmsnormBackwardRef(x: ArrayLike<number>, w: ArrayLike<number>, eps: number, dy: ArrayLike<number>): { dx: Float64Array; dw: Float64Array } {
  const n = w.length;
  const rows = x.length / n;
  const { rstd } = rmsnormRef(x, w, eps);
  const dx = new Float64Array(x.length);
  const dw = new Float64Array(n);
  for (let r = 0; r < rows; r++) {
    const s = rstd[r]!;
    let c = 0;
    for (let i = 0; i < n; i++) c += w[i]! * dy[r * n + i]! * x[r * n + i]! * s;
    c /= n;
    for (let i = 0; i < n; i++) {
      const xh = x[r * n + i]! * s;
      dx[r * n + i] = s * (w[i]! * dy[r * n + i]! - xh * c);
      dw[i]! += dy[r * n + i]! * xh;
    }
  }
  return { dx, dw };
}
