// cos/sin tables for rotary embeddings, computed on the CPU exactly as Hugging Face does in f32
// (inv_freq = 1 / θ^(arange(0, hd, 2) / hd), freqs = pos · inv_freq, then cos/sin), uploaded as
// f32 [maxPos, hd/2] and grown lazily (doubling) as longer positions are needed.
import type { Gpu } from '../gpu/gpu.ts';
import type { Tensor } from '../gpu/tensor.ts';

const f = Math.fround;

/** inv_freq[i] = 1 / θ^(2i / hd), every step rounded to f32 like torch. */
export function ropeInvFreq(headDim: number, theta: number): Float32Array {
  const half = headDim / 2;
  const out = new Float32Array(half);
  for (let i = 0; i < half; i++) out[i] = f(1 / f(Math.pow(theta, f((2 * i) / headDim))));
  return out;
}

/** cos and sin [n, hd/2] of positions 0..n-1. */
export function ropeTables(headDim: number, theta: number, n: number): { cos: Float32Array; sin: Float32Array } {
  const inv = ropeInvFreq(headDim, theta);
  const half = inv.length;
  const cos = new Float32Array(n * half);
  const sin = new Float32Array(n * half);
  for (let p = 0; p < n; p++) {
    for (let i = 0; i < half; i++) {
      const a = f(p * inv[i]!);
      cos[p * half + i] = Math.cos(a);
      sin[p * half + i] = Math.sin(a);
    }
  }
  return { cos, sin };
}

export class RopeTable {
  private tables: { cos: Tensor; sin: Tensor } | null = null;
  private length = 0;

  constructor(
    readonly gpu: Gpu,
    readonly headDim: number,
    readonly theta: number,
    initialPositions = 256,
  ) {
    if (!Number.isInteger(headDim) || headDim <= 0 || headDim % 2) throw new Error(`RopeTable: head dim ${headDim} must be even`);
    this.ensure(initialPositions);
  }

  /** Positions covered. */
  get positions(): number {
    return this.length;
  }

  get cos(): Tensor {
    return this.tables!.cos;
  }

  get sin(): Tensor {
    return this.tables!.sin;
  }

  /** Makes the tables cover positions 0..n-1 (doubling, so growth is rare). */
  ensure(n: number): void {
    if (n <= this.length) return;
    let len = Math.max(this.length, 1);
    while (len < n) len *= 2;
    const { cos, sin } = ropeTables(this.headDim, this.theta, len);
    const half = this.headDim / 2;
    // Old tensors may still be bound by recorded dispatches: they return to the pool, never mutated.
    this.tables?.cos.release();
    this.tables?.sin.release();
    this.tables = {
      cos: this.gpu.upload(cos, [len, half], 'f32', 'rope.cos'),
      sin: this.gpu.upload(sin, [len, half], 'f32', 'rope.sin'),
    };
    this.length = len;
  }

  release(): void {
    this.tables?.cos.release();
    this.tables?.sin.release();
    this.tables = null;
    this.length = 0;
  }
}
