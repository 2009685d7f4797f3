// Central finite differences of a scalar function of a vector (f64), for checking analytic backwards.

/** d f / d x[i] for every i, by (f(x + h·e_i) − f(x − h·e_i)) / 2h. */
export function numericGrad(f: (x: Float64Array) => number, x: ArrayLike<number>, h = 1e-5): Float64Array {
  const v = Float64Array.from(x);
  const g = new Float64Array(v.length);
  for (let i = 0; i < v.length; i++) {
    const x0 = v[i]!;
    v[i] = x0 + h;
    const fp = f(v);
    v[i] = x0 - h;
    const fm = f(v);
    v[i] = x0;
    g[i] = (fp - fm) / (2 * h);
  }
  return g;
}

/** Σ a·b: the scalar whose gradient wrt the output is the upstream gradient b. */
export function dot(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return s;
}
