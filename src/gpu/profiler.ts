// Per-kernel GPU time from timestamp queries: each profiled dispatch gets its own pass with
// begin/end timestamps; results are summed per label. A query set holds 4096 queries (2048 passes,
// WebGPU's maximum set size), so a batch takes as many sets as it needs (a training step has about 4,500
// passes); past `maxPassesPerBatch` passes run untimed and are counted per label in `untimed()`.

/** Queries in one set: the largest a WebGPU query set may be. */
const QUERIES = 4096;
const PASSES_PER_SET = QUERIES / 2;

export interface KernelTime {
  label: string;
  count: number;
  totalMs: number;
}

export interface ProfilerOptions {
  /** Most timed passes in one batch (submit); default 65,536 (32 query sets). */
  maxPassesPerBatch?: number;
}

interface QuerySlot {
  set: GPUQuerySet;
  resolve: GPUBuffer;
}

export class Profiler {
  private readonly slots: QuerySlot[] = [];
  private labels: string[] = [];
  private readonly totals = new Map<string, { count: number; ns: number }>();
  private readonly skipped = new Map<string, number>();
  private readonly inflight: Promise<void>[] = [];
  private pendingRead: { read: GPUBuffer; labels: string[] } | null = null;
  readonly maxPassesPerBatch: number;

  constructor(
    private readonly device: GPUDevice,
    options: ProfilerOptions = {},
  ) {
    this.maxPassesPerBatch = Math.max(1, Math.floor(options.maxPassesPerBatch ?? 32 * PASSES_PER_SET));
  }

  private slot(k: number): QuerySlot {
    while (this.slots.length <= k) {
      const i = this.slots.length;
      this.slots.push({
        set: this.device.createQuerySet({ type: 'timestamp', count: QUERIES, label: `profiler ${i}` }),
        resolve: this.device.createBuffer({ size: QUERIES * 8, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC, label: `profiler resolve ${i}` }),
      });
    }
    return this.slots[k]!;
  }

  /** Timestamp writes for the next pass, or undefined (the pass is counted as untimed) when this batch has
   * reached maxPassesPerBatch. */
  writes(label: string): GPUComputePassTimestampWrites | undefined {
    const i = this.labels.length;
    if (i >= this.maxPassesPerBatch) {
      this.skipped.set(label, (this.skipped.get(label) ?? 0) + 1);
      return undefined;
    }
    this.labels.push(label);
    const j = i % PASSES_PER_SET;
    return { querySet: this.slot(Math.floor(i / PASSES_PER_SET)).set, beginningOfPassWriteIndex: 2 * j, endOfPassWriteIndex: 2 * j + 1 };
  }

  /** Called before the batch is finished: resolve its queries (every set it used) into one readable buffer. */
  resolve(encoder: GPUCommandEncoder): void {
    const n = this.labels.length;
    if (!n) return;
    const read = this.device.createBuffer({ size: 2 * n * 8, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST, label: 'profiler read' });
    for (let k = 0; k * PASSES_PER_SET < n; k++) {
      const passes = Math.min(PASSES_PER_SET, n - k * PASSES_PER_SET);
      const s = this.slot(k);
      encoder.resolveQuerySet(s.set, 0, 2 * passes, s.resolve, 0);
      encoder.copyBufferToBuffer(s.resolve, 0, read, k * QUERIES * 8, 2 * passes * 8);
    }
    this.pendingRead = { read, labels: this.labels };
    this.labels = [];
  }

  /** Called after submit: map the resolved timestamps and add them up. */
  collect(): void {
    const p = this.pendingRead;
    if (!p) return;
    this.pendingRead = null;
    this.inflight.push(
      p.read.mapAsync(GPUMapMode.READ).then(() => {
        const t = new BigInt64Array(p.read.getMappedRange());
        p.labels.forEach((label, i) => {
          const ns = Number(t[2 * i + 1]! - t[2 * i]!);
          const e = this.totals.get(label) ?? { count: 0, ns: 0 };
          e.count++;
          e.ns += Math.max(0, ns);
          this.totals.set(label, e);
        });
        p.read.destroy();
      }),
    );
  }

  async results(): Promise<KernelTime[]> {
    await Promise.all(this.inflight.splice(0));
    return [...this.totals].map(([label, e]) => ({ label, count: e.count, totalMs: e.ns / 1e6 })).sort((a, b) => b.totalMs - a.totalMs);
  }

  /** Passes that ran without timestamps (over maxPassesPerBatch in their batch), per label. */
  untimed(): { label: string; count: number }[] {
    return [...this.skipped].map(([label, count]) => ({ label, count })).sort((a, b) => b.count - a.count);
  }

  reset(): void {
    this.totals.clear();
    this.skipped.clear();
  }
}
