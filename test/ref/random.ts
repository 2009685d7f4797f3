// CPU reference of shaders/random_normal.wgsl: the same hash, uniforms and Box-Muller in f32 steps.

function hash(v: number): number {
  let x = v >>> 0;
  x = (x ^ (x >>> 16)) >>> 0;
  x = Math.imul(x, 0x7feb352d) >>> 0;
  x = (x ^ (x >>> 15)) >>> 0;
  x = Math.imul(x, 0x846ca68b) >>> 0;
  x = (x ^ (x >>> 16)) >>> 0;
  return x;
}

export function randomNormalRef(n: number, seed: number, mean: number, std: number): Float32Array {
  const out = new Float32Array(n);
  const s = hash(seed >>> 0);
  for (let i = 0; i < n; i++) {
    const h1 = hash((i ^ s) >>> 0);
    const h2 = hash((h1 ^ 0x9e3779b9) >>> 0);
    const u1 = Math.fround((Math.fround(h1 >>> 8) + 0.5) / 16777216);
    const u2 = Math.fround((h2 >>> 8) / 16777216);
    const z = Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
    out[i] = mean + std * z;
  }
  return out;
}
