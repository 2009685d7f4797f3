// Builds the bytes of a WGSL uniform struct made of 4-byte scalars (u32, i32, f32), in field order. Every
// dispatch builds one, so fields are kept as 32-bit words in a plain array and copied straight into the
// batch's uniform chunk (writeTo): no buffer of its own to allocate.

const f32Scratch = new Float32Array(1);
const f32Bits = new Uint32Array(f32Scratch.buffer);

export class Uniforms {
  private readonly words: number[] = [];
  u32(v: number): this {
    if (!Number.isInteger(v) || v < 0 || v > 0xffffffff) throw new RangeError(`uniform u32 out of range: ${v}`);
    this.words.push(v);
    return this;
  }
  i32(v: number): this {
    if (!Number.isInteger(v) || v < -0x80000000 || v > 0x7fffffff) throw new RangeError(`uniform i32 out of range: ${v}`);
    this.words.push(v >>> 0);
    return this;
  }
  f32(v: number): this {
    f32Scratch[0] = v;
    this.words.push(f32Bits[0]!);
    return this;
  }
  /** Size of the struct: the fields, padded to 16 (uniform structs round up to their 16-byte alignment). */
  get byteLength(): number {
    return Math.max(16, Math.ceil(this.words.length / 4) * 16);
  }
  /** Writes the struct (fields, then zeroed padding: byteLength bytes) into dst from word `at` on. */
  writeTo(dst: Uint32Array, at: number): void {
    const w = this.words;
    const n = this.byteLength / 4;
    for (let i = 0; i < n; i++) dst[at + i] = i < w.length ? w[i]! : 0;
  }
  /** The struct's bytes, little-endian, padding zeroed. */
  bytes(): Uint8Array {
    const out = new Uint32Array(this.byteLength / 4);
    this.writeTo(out, 0);
    return new Uint8Array(out.buffer);
  }
}

/** Shorthand: uniforms from a list of u32 values. */
export function u32s(...values: number[]): Uniforms {
  const u = new Uniforms();
  for (const v of values) u.u32(v);
  return u;
}
