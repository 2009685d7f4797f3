// Builds the bytes of a WGSL uniform struct made of 4-byte scalars (u32, i32, f32), in field order.

export class Uniforms {
  private readonly view: DataView;
  private offset = 0;
  constructor(capacity = 256) {
    this.view = new DataView(new ArrayBuffer(capacity));
  }
  u32(v: number): this {
    if (!Number.isInteger(v) || v < 0 || v > 0xffffffff) throw new RangeError(`uniform u32 out of range: ${v}`);
    this.view.setUint32(this.offset, v, true);
    this.offset += 4;
    return this;
  }
  i32(v: number): this {
    if (!Number.isInteger(v)) throw new RangeError(`uniform i32 not an integer: ${v}`);
    this.view.setInt32(this.offset, v, true);
    this.offset += 4;
    return this;
  }
  f32(v: number): this {
    this.view.setFloat32(this.offset, v, true);
    this.offset += 4;
    return this;
  }
  /** Bytes written, padded to 16 (uniform structs round up to their 16-byte alignment). */
  bytes(): Uint8Array {
    const n = Math.max(16, Math.ceil(this.offset / 16) * 16);
    return new Uint8Array(this.view.buffer, 0, n);
  }
}

/** Shorthand: uniforms from a list of u32 values. */
export function u32s(...values: number[]): Uniforms {
  const u = new Uniforms(Math.max(256, values.length * 4));
  for (const v of values) u.u32(v);
  return u;
}
