// CPU references for shaders/elementwise.wgsl.
export const addRef = (a: Float32Array, b: Float32Array) => a.map((x, i) => x + b[i]!);
export const mulRef = (a: Float32Array, b: Float32Array) => a.map((x, i) => x * b[i]!);
export const scaleRef = (a: Float32Array, s: number) => a.map((x) => x * s);
export const siluRef = (a: Float32Array) => a.map((x) => x / (1 + Math.exp(-x)));
export const addRowRef = (a: Float32Array, b: Float32Array) => a.map((x, i) => x + b[i % b.length]!);
