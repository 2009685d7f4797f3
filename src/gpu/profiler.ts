// Per-kernel GPU time from timestamp queries: each profiled dispatch gets its own pass with
// begin/end timestamps; results are summed per label.

const QUERIES = 4096;

export interface KernelTime {
  label: string;
  count: number;
  totalMs: number;
}

export class Profiler {
  private readonly querySet: GPUQuerySet;
  private readonly resolveBuf: GPUBuffer;
  private labels: string[] = [];
  private readonly totals = new Map<string, { count: number; ns: number }>();
  private readonly inflight: Promise<void>[] = [];

  constructor(private readonly device: GPUDevice) {
    this.querySet = device.createQuerySet({ type: 'timestamp', count: QUERIES, label: 'profiler' });
    this.resolveBuf = device.createBuffer({ size: QUERIES * 8, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC, label: 'profiler resolve' });
  }

  /** Timestamp writes for the next pass, or undefined when this batch's query set is full. */
  writes(label: string): GPUComputePassTimestampWrites | undefined {
    const i = this.labels.length;
    if (2 * i + 1 >= QUERIES) return undefined;
    this.labels.push(label);
    return { querySet: this.querySet, beginningOfPassWriteIndex: 2 * i, endOfPassWriteIndex: 2 * i + 1 };
  }

  /** Called before the batch is finished: resolve its queries into a readable buffer. */
  resolve(encoder: GPUCommandEncoder): void {
    const n = this.labels.length;
    if (!n) return;
    encoder.resolveQuerySet(this.querySet, 0, 2 * n, this.resolveBuf, 0);
    const read = this.device.createBuffer({ size: 2 * n * 8, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST, label: 'profiler read' });
    encoder.copyBufferToBuffer(this.resolveBuf, 0, read, 0, 2 * n * 8);
    const labels = this.labels;
    this.labels = [];
    this.pendingRead = { read, labels };
  }

  private pendingRead: { read: GPUBuffer; labels: string[] } | null = null;

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

  reset(): void {
    this.totals.clear();
  }
}
