// CPU reference for shaders/swiglu.wgsl (f64).
const sigmoid = (v: number) => 1 / (1 + Math.exp(-v));

export function swigluRef(gate: ArrayLike<number>, up: ArrayLike<number>): Float64Array {
  return Float64Array.from({ length: gate.length }, (_, i) => gate[i]! * sigmoid(gate[i]!) * up[i]!);
}

export function swigluBackwardRef(gate: ArrayLike<number>, up: ArrayLike<number>, dh: ArrayLike<number>): { dGate: Float64Array; dUp: Float64Array } {
  const n = gate.length;
  const dGate = new Float64Array(n);
  const dUp = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const g = gate[i]!;
    const s = sigmoid(g);
    dGate[i] = dh[i]! * up[i]! * s * (1 + g * (1 - s));
    dUp[i] = dh[i]! * g * s;
  }
  return { dGate, dUp };
}
