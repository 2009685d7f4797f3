// Element types of GPU tensors and the CPU-side conversions between their bit patterns.

export type DType = 'f32' | 'f16' | 'u32' | 'i32';

export const BYTES: Record<DType, number> = { f32: 4, f16: 2, u32: 4, i32: 4 };

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** IEEE half from float, round to nearest even (as GPUs and numpy do). */
export function f32ToF16Bits(value: number): number {
  f32[0] = value;
  const x = u32[0]!;
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  let mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  let e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    const half = 1 << (shift - 1);
    let r = mant >>> shift;
    const rem = mant & ((1 << shift) - 1);
    if (rem > half || (rem === half && (r & 1))) r++;
    return sign | r;
  }
  let r = mant >>> 13;
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && (r & 1))) {
    r++;
    if (r === 0x400) {
      r = 0;
      e++;
      if (e >= 0x1f) return sign | 0x7c00;
    }
  }
  return sign | (e << 10) | r;
}

export function f16BitsToF32(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >>> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 0x1f) return mant ? NaN : sign * Infinity;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}

export function bf16BitsToF32(b: number): number {
  u32[0] = (b & 0xffff) << 16;
  return f32[0]!;
}

/** bfloat16 from float, round to nearest even; NaN stays NaN. */
export function f32ToBf16Bits(value: number): number {
  f32[0] = value;
  const x = u32[0]!;
  if ((x & 0x7fffffff) > 0x7f800000) return ((x >>> 16) | 0x40) & 0xffff;
  return ((x + 0x7fff + ((x >>> 16) & 1)) >>> 16) & 0xffff;
}

export function toF16Array(src: ArrayLike<number>): Uint16Array {
  const out = new Uint16Array(src.length);
  for (let i = 0; i < src.length; i++) out[i] = f32ToF16Bits(src[i]!);
  return out;
}

export function fromF16Array(src: Uint16Array): Float32Array {
  const out = new Float32Array(src.length);
  for (let i = 0; i < src.length; i++) out[i] = f16BitsToF32(src[i]!);
  return out;
}

/** Rounds through f16 and back: what a value looks like after f16 storage. */
export function roundF16(src: ArrayLike<number>): Float32Array {
  return fromF16Array(toF16Array(src));
}
