// CPU references for shaders/cast.wgsl, as bit patterns (src/gpu/dtype.ts conversions).
import { f32ToF16Bits } from '../../src/gpu/dtype.ts';

const f = new Float32Array(1);
const u = new Uint32Array(f.buffer);

export function f32BitsOf(v: number): number {
  f[0] = v;
  return u[0]!;
}

export function f32FromBits(bits: number): number {
  u[0] = bits >>> 0;
  return f[0]!;
}

/** bf16 bits -> f32 bits: the bf16 is the f32's upper half. */
export const bf16ToF32BitsRef = (b: number) => ((b & 0xffff) << 16) >>> 0;

/** bf16 bits -> f16 bits, through the exact f32 value. */
export const bf16ToF16BitsRef = (b: number) => f32ToF16Bits(f32FromBits(bf16ToF32BitsRef(b)));

/** f32 bits -> f16 bits, round to nearest even. */
export const f32ToF16BitsRef = (bits: number) => f32ToF16Bits(f32FromBits(bits));

/** f16 bits -> f32 bits, exact; NaN keeps its payload (mantissa shifted up). */
export function f16ToF32BitsRef(h: number): number {
  const sign = (h & 0x8000) << 16;
  const exp = (h >>> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0) return (sign | f32BitsOf(mant * 2 ** -24)) >>> 0;
  if (exp === 0x1f) return (sign | 0x7f800000 | (mant << 13)) >>> 0;
  return (sign | ((exp + 112) << 23) | (mant << 13)) >>> 0;
}
