// Seeded random inputs (never zeros) and error measures for comparing GPU results with CPU references.
import { mulberry32 } from '../../src/util/mulberry32.ts';

/** Uniform in [0, 1), deterministic in seed. */
export const rng = mulberry32;

/** Uniform in [-scale, scale], with values near zero pushed away so no entry is 0. */
export function randn(n: number, seed: number, scale = 1): Float32Array {
  const r = rng(seed);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    // Box-Muller normal
    const u = Math.max(r(), 1e-12);
    const v = r();
    let x = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v) * scale;
    if (Math.abs(x) < 1e-3 * scale) x = (x < 0 ? -1e-3 : 1e-3) * scale;
    out[i] = x;
  }
  return out;
}

export function randInts(n: number, seed: number, max: number): Uint32Array {
  const r = rng(seed);
  const out = new Uint32Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.floor(r() * max);
  return out;
}

/** max |a-b| / max(|b|_inf, floor): relative to the reference's scale. */
export function relError(a: ArrayLike<number>, b: ArrayLike<number>, floor = 1e-6): number {
  if (a.length !== b.length) throw new Error(`length ${a.length} vs ${b.length}`);
  let maxDiff = 0;
  let maxRef = floor;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i]! - b[i]!);
    if (!(d <= maxDiff)) maxDiff = Number.isNaN(d) ? Infinity : d;
    maxRef = Math.max(maxRef, Math.abs(b[i]!));
  }
  return maxDiff / maxRef;
}

/** max over i of |a-b| / (|b| + atol): elementwise relative error. */
export function maxElemRelError(a: ArrayLike<number>, b: ArrayLike<number>, atol = 1e-6): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    const e = Math.abs(a[i]! - b[i]!) / (Math.abs(b[i]!) + atol);
    if (!(e <= m)) m = Number.isNaN(e) ? Infinity : e;
  }
  return m;
}

/** max over i of |a-b| / (atol + rtol·|b|): at most 1 when every element is within the mixed tolerance. */
export function mixedError(a: ArrayLike<number>, b: ArrayLike<number>, rtol: number, atol: number): number {
  if (a.length !== b.length) throw new Error(`length ${a.length} vs ${b.length}`);
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    const e = Math.abs(a[i]! - b[i]!) / (atol + rtol * Math.abs(b[i]!));
    if (!(e <= m)) m = Number.isNaN(e) ? Infinity : e;
  }
  return m;
}

/** The largest |v|. */
export function maxAbs(v: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < v.length; i++) m = Math.max(m, Math.abs(v[i]!));
  return m;
}
