// CPU reference for shaders/rope.wgsl (f64 arithmetic on the f32 tables): rotate-half rotary embedding.
export function ropeRef(
  x: ArrayLike<number>,
  heads: number,
  headDim: number,
  positions: ArrayLike<number>,
  cos: ArrayLike<number>,
  sin: ArrayLike<number>,
  sign = 1,
): Float64Array {
  const half = headDim / 2;
  const out = Float64Array.from(x);
  for (let t = 0; t < positions.length; t++) {
    for (let h = 0; h < heads; h++) {
      const base = (t * heads + h) * headDim;
      for (let i = 0; i < half; i++) {
        const c = cos[positions[t]! * half + i]!;
        const s = sign * sin[positions[t]! * half + i]!;
        const a = x[base + i]!;
        const b = x[base + i + half]!;
        out[base + i] = a * c - b * s;
        out[base + i + half] = b * c + a * s;
      }
    }
  }
  return out;
}
