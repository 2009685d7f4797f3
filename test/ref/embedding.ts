// CPU reference for shaders/embedding.wgsl (f64).
export function embeddingRef(table: ArrayLike<number>, cols: number, ids: ArrayLike<number>): Float64Array {
  const out = new Float64Array(ids.length * cols);
  for (let t = 0; t < ids.length; t++) for (let c = 0; c < cols; c++) out[t * cols + c] = table[ids[t]! * cols + c]!;
  return out;
}

/** dTable += scatter-add of dY rows by id. */
export function embeddingBackwardRef(dY: ArrayLike<number>, cols: number, ids: ArrayLike<number>, dTable: ArrayLike<number>): Float64Array {
  const out = Float64Array.from(dTable);
  for (let t = 0; t < ids.length; t++) for (let c = 0; c < cols; c++) out[ids[t]! * cols + c]! += dY[t * cols + c]!;
  return out;
}
