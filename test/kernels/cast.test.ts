import { describe, expect, it } from 'vitest';
import { f16BitsToF32, f32ToBf16Bits } from '../../src/gpu/dtype.ts';
import { cast, castBf16 } from '../../src/kernels/cast.ts';
import { testGpu } from '../helpers/gpu.ts';
import { randn, rng } from '../helpers/random.ts';
import { bf16ToF16BitsRef, bf16ToF32BitsRef, f16ToF32BitsRef, f32BitsOf, f32FromBits, f32ToF16BitsRef } from '../ref/cast.ts';

/** f32 bit patterns that probe every branch of f32 -> f16: zeros, subnormals, ties, overflow, inf, NaN. */
function specialF32Bits(): number[] {
  const values = [0, -0, 1, -1, 65504, 65519.99, 65520, -65520, 1e10, Infinity, -Infinity, 2 ** -14, 2 ** -24, 2 ** -25, 2 ** -26, 3 * 2 ** -26, 1e-30, 6.1e-5, 5.96e-8];
  const bits = values.map(f32BitsOf);
  bits.push(0x7fc00000, 0xffc00001, 0x7f800001, 0x00000001, 0x80000001, 0x007fffff); // NaNs, f32 subnormals
  // ties and near-ties at the rounding bit, for normal and subnormal halves
  for (const base of [0x3f800000, 0x3f801000, 0x38800000, 0x33800000, 0x33000000, 0x387fe000, 0x477fe000]) {
    for (const d of [-1, 0, 1, 0x1000, 0x1001, 0x0fff, 0x2000, 0x3000]) bits.push((base + d) >>> 0);
  }
  return bits;
}

function randomF32Bits(n: number, seed: number): number[] {
  const r = rng(seed);
  return Array.from({ length: n }, () => Math.floor(r() * 2 ** 32) >>> 0);
}

type TestGpu = Awaited<ReturnType<typeof testGpu>>;

/** An f32 tensor holding exactly these bit patterns (NaN payloads included). */
function uploadBits(gpu: TestGpu, bits: number[], label: string) {
  return gpu.upload(new Float32Array(new Uint32Array(bits).buffer), [bits.length], 'f32', label);
}

async function bitsOf(gpu: TestGpu, t: { buffer: GPUBuffer; byteLength: number; label: string }) {
  return gpu.readBytes(t.buffer, 0, Math.ceil(t.byteLength / 4) * 4, t.label);
}

describe('cast', () => {
  it('the bit references agree with src/gpu/dtype.ts', () => {
    for (let h = 0; h < 0x10000; h++) {
      const want = f16BitsToF32(h);
      const got = f32FromBits(f16ToF32BitsRef(h));
      if (Number.isNaN(want)) expect(Number.isNaN(got)).toBe(true);
      else expect(Object.is(got, want)).toBe(true);
    }
  });

  for (const n of [1, 2, 7, 256, 1001, 70_001]) {
    it(`f32 -> f16 matches f32ToF16Bits (round to nearest even) n=${n}`, async () => {
      const gpu = await testGpu();
      const bits = randomF32Bits(n, n);
      // random bit patterns are mostly far outside f16's range: every other value is a normal in it
      const normal = randn(n, n + 1, 1000);
      for (let i = 0; i < n; i += 2) bits[i] = f32BitsOf(normal[i]!);
      const out = cast(gpu, uploadBits(gpu, bits, 'x'), 'f16');
      expect(out.dtype).toBe('f16');
      const got = new Uint16Array(await bitsOf(gpu, out), 0, n);
      expect(Array.from(got)).toEqual(bits.map(f32ToF16BitsRef));
    });
  }

  it('f32 -> f16 covers every special case', async () => {
    const gpu = await testGpu();
    const bits = specialF32Bits();
    const got = new Uint16Array(await bitsOf(gpu, cast(gpu, uploadBits(gpu, bits, 'special'), 'f16')), 0, bits.length);
    expect(Array.from(got)).toEqual(bits.map(f32ToF16BitsRef));
  });

  for (const n of [1, 3, 65_536, 65_537]) {
    it(`f16 -> f32 exact over all f16 bit patterns n=${n}`, async () => {
      const gpu = await testGpu();
      const h = new Uint16Array(n);
      for (let i = 0; i < n; i++) h[i] = (i * 40503 + 7) & 0xffff; // 40503 is odd: a permutation of all 65536
      const out = cast(gpu, gpu.upload(h, [n], 'f16', 'h'), 'f32');
      const got = new Uint32Array(await bitsOf(gpu, out), 0, n);
      expect(Array.from(got)).toEqual(Array.from(h, f16ToF32BitsRef));
    });
  }

  for (const n of [1, 2, 9, 4097]) {
    it(`bf16 -> f32 and bf16 -> f16 n=${n}`, async () => {
      const gpu = await testGpu();
      const vals = randn(n, n * 13, 30);
      vals[0] = n === 1 ? 1e-40 : Infinity; // f32 subnormal / inf
      if (n > 2) vals[1] = NaN;
      const b = Array.from(vals, f32ToBf16Bits);
      const words = new Uint32Array(Math.ceil(n / 2));
      for (let i = 0; i < n; i++) words[i >> 1]! |= b[i]! << (16 * (i & 1));
      const bits = gpu.upload(words, [words.length], 'u32', 'bf16');
      const f32 = castBf16(gpu, bits, n, 'f32');
      expect(Array.from(new Uint32Array(await bitsOf(gpu, f32), 0, n))).toEqual(b.map(bf16ToF32BitsRef));
      const f16 = castBf16(gpu, bits, n, 'f16', undefined, n % 3 === 0 ? [3, n / 3] : [n]);
      expect(Array.from(new Uint16Array(await bitsOf(gpu, f16), 0, n))).toEqual(b.map(bf16ToF16BitsRef));
    });
  }

  it('rejects too few bf16 words and wrong dtypes, naming the tensor', async () => {
    const gpu = await testGpu();
    const bits = gpu.upload(new Uint32Array(3), [3], 'u32', 'embed.bits');
    expect(() => castBf16(gpu, bits, 7, 'f32')).toThrow(/embed.bits has 3 words, 7 bf16 values need 4/);
    expect(() => cast(gpu, bits, 'f16')).toThrow(/embed.bits is u32, expected f32/);
  });
});
