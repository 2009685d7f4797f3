// CPU references for shaders/reduce.wgsl: per-row sum, max, sum of squares (f64 accumulation).
export type ReduceOpRef = 'sum' | 'max' | 'sumsq';

export function reduceRef(x: Float32Array, rows: number, n: number, op: ReduceOpRef): Float32Array {
  const out = new Float32Array(rows);
  for (let r = 0; r < rows; r++) {
    let acc = op === 'max' ? -Infinity : 0;
    for (let i = 0; i < n; i++) {
      const v = x[r * n + i]!;
      acc = op === 'max' ? Math.max(acc, v) : acc + (op === 'sumsq' ? v * v : v);
    }
    out[r] = acc;
  }
  return out;
}
