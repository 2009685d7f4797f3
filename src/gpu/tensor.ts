// A typed handle on a GPU buffer: shape, dtype, label. Buffers come from and return to the Gpu's pool.
import { BYTES, type DType } from './dtype.ts';
import type { Gpu } from './gpu.ts';

export class Tensor {
  private released = false;
  /** Number of elements (kernel wrappers check it on every dispatch: computed once). */
  readonly size: number;
  constructor(
    readonly gpu: Gpu,
    readonly buffer: GPUBuffer,
    readonly shape: readonly number[],
    readonly dtype: DType,
    readonly label: string,
  ) {
    let n = 1;
    for (const d of shape) n *= d;
    this.size = n;
  }

  /** Bytes of the data (the buffer may be larger: sizes are rounded for pooling). */
  get byteLength(): number {
    return this.size * BYTES[this.dtype];
  }

  get isReleased(): boolean {
    return this.released;
  }

  /** Same buffer seen with another shape of the same element count. */
  view(shape: readonly number[], label = this.label): Tensor {
    const n = shape.reduce((a, b) => a * b, 1);
    if (n !== this.size) throw new Error(`${this.label}: cannot view [${this.shape}] as [${shape}]`);
    return new Tensor(this.gpu, this.buffer, shape, this.dtype, label);
  }

  /** Returns the buffer to the pool. Views share the buffer: release only the owner. */
  release(): void {
    if (this.released) return;
    this.released = true;
    this.gpu.pool.release(this.buffer);
  }
}
