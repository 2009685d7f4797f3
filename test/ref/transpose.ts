// CPU reference for shaders/transpose.wgsl: [R, C] -> [C, R].
export function transposeRef(x: Float32Array, R: number, C: number): Float32Array {
  const out = new Float32Array(R * C);
  for (let r = 0; r < R; r++) for (let c = 0; c < C; c++) out[c * R + r] = x[r * C + c]!;
  return out;
}
