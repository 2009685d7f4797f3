// Reuses storage buffers by size class, and counts live, pooled and peak bytes.

export const STORAGE_USAGE = 0x80 /* STORAGE */ | 0x4 /* COPY_SRC */ | 0x8 /* COPY_DST */;

/** Size classes: multiples of 256 B up to 64 KiB, then steps of 1/8 of a power of two (<= 12.5% waste). */
export function sizeClass(bytes: number): number {
  const b = Math.max(256, bytes);
  if (b <= 65536) return Math.ceil(b / 256) * 256;
  const step = 2 ** (Math.floor(Math.log2(b)) - 3);
  return Math.ceil(b / step) * step;
}

export interface MemoryStats {
  liveBytes: number;
  pooledBytes: number;
  peakBytes: number;
  largestBufferBytes: number;
  buffers: number;
}

export class BufferPool {
  /** Free buffers per size class, sorted by creation order, newest first: acquire takes the oldest. */
  private readonly free = new Map<number, GPUBuffer[]>();
  private readonly sizes = new WeakMap<GPUBuffer, number>();
  private readonly order = new WeakMap<GPUBuffer, number>();
  private readonly labels = new WeakMap<GPUBuffer, string>();
  private created = 0;
  readonly stats: MemoryStats = { liveBytes: 0, pooledBytes: 0, peakBytes: 0, largestBufferBytes: 0, buffers: 0 };

  constructor(
    private readonly create: (size: number, label: string) => GPUBuffer,
    /** Told which buffers trim() is about to destroy (the Gpu drops its bind groups over them). */
    private readonly onDestroy: (buffers: GPUBuffer[]) => void = () => {},
  ) {}

  acquire(bytes: number, label: string): GPUBuffer {
    const size = sizeClass(bytes);
    const list = this.free.get(size);
    let buf = list?.pop();
    if (buf) {
      this.stats.pooledBytes -= size;
      // The label setter crosses into the runtime: skipped when the buffer already has it (a decode step
      // gets its buffers back under the same labels step after step).
      if (this.labels.get(buf) !== label) {
        buf.label = label;
        this.labels.set(buf, label);
      }
    } else {
      buf = this.create(size, label);
      this.sizes.set(buf, size);
      this.labels.set(buf, label);
      this.order.set(buf, this.created++);
      this.stats.buffers++;
      this.stats.largestBufferBytes = Math.max(this.stats.largestBufferBytes, size);
    }
    this.stats.liveBytes += size;
    this.stats.peakBytes = Math.max(this.stats.peakBytes, this.stats.liveBytes + this.stats.pooledBytes);
    return buf;
  }

  release(buf: GPUBuffer): void {
    const size = this.sizes.get(buf);
    if (size === undefined) throw new Error(`buffer ${buf.label} does not belong to the pool`);
    this.stats.liveBytes -= size;
    this.stats.pooledBytes += size;
    let list = this.free.get(size);
    if (!list) this.free.set(size, (list = []));
    // Which buffer an acquire gets depends only on which buffers are free, not on the order they were
    // released in: a loop that repeats the same allocations (a decode step) gets the same buffers each
    // time, so the Gpu's cached bind groups over them keep matching.
    const k = this.order.get(buf)!;
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.order.get(list[mid]!)! > k) lo = mid + 1;
      else hi = mid;
    }
    list.splice(lo, 0, buf);
  }

  /** Starts a new peak measurement from what is allocated now. */
  resetPeak(): void {
    this.stats.peakBytes = this.stats.liveBytes + this.stats.pooledBytes;
  }

  /** Destroys pooled (unused) buffers. */
  trim(): void {
    this.onDestroy([...this.free.values()].flat());
    for (const list of this.free.values()) for (const b of list) b.destroy();
    this.stats.buffers -= [...this.free.values()].reduce((a, l) => a + l.length, 0);
    this.free.clear();
    this.stats.pooledBytes = 0;
  }
}
