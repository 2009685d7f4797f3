// Builds the bytes of a WGSL uniform struct made of 4-byte scalars (u32, i32, f32), in field order.
// Every dispatch builds one, so it starts small (most structs are 16-32 bytes) and grows when needed.

export class Uniforms {
  private view: DataView;
  private offset = 0;
  constructor(capacity = 32) {
    this.view = new DataView(new ArrayBuffer(Math.max(16, Math.ceil(capacity / 16) * 16)));
  }
  private room(): DataView {
    if (this.offset + 4 > this.view.byteLength) {
      const grown = new Uint8Array(this.view.byteLength * 2);
      grown.set(new Uint8Array(this.view.buffer));
      this.view = new DataView(grown.buffer);
    }
    return this.view;
  }
  u32(v: number): this {
    if (!Number.isInteger(v) || v < 0 || v > 0xffffffff) throw new RangeError(`uniform u32 out of range: ${v}`);
    this.room().setUint32(this.offset, v, true);
    this.offset += 4;
    return this;
  }
  i32(v: number): this {
    if (!Number.isInteger(v)) throw new RangeError(`uniform i32 not an integer: ${v}`);
    this.room().setInt32(this.offset, v, true);
    this.offset += 4;
    return this;
  }
  f32(v: number): this {
    this.room().setFloat32(this.offset, v, true);
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
  const u = new Uniforms(values.length * 4);
  for (const v of values) u.u32(v);
  return u;
}
