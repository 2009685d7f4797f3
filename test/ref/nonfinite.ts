// CPU reference of shaders/nonfinite.wgsl: the count of NaN/±Inf elements and the first one's index.
export function nonFiniteRef(x: ArrayLike<number>): { count: number; first: number } {
  let count = 0;
  let first = 0xffffffff;
  for (let i = 0; i < x.length; i++) {
    if (!Number.isFinite(x[i]!)) {
      count++;
      if (first === 0xffffffff) first = i;
    }
  }
  return { count, first };
}
