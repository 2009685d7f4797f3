// When the GPU works and when it waits for the host: every batch (submit) gets a timestamp at its start
// and one at its end (an empty compute pass with timestampWrites before its first command and after its
// last), nothing inside it, so the kernels run as they would untimed (unlike the profiler's pass per
// dispatch). Busy time is the union of the batches' spans; an idle gap is the time between one batch's end
// and the next one's start, charged to the phase of the batch the GPU was waiting for. The phase is Gpu.phase
// when the batch began: whatever the caller names the work it records (a GRPO step's rollout, update, ...).

/** Batches timed between two resolves of the query ring; the ring holds twice that many queries. */
const RING_BATCHES = 2048;
/** resolveQuerySet writes at multiples of 256 bytes: one slot per batch. */
const SLOT_BYTES = 256;

export interface PhaseTime {
  phase: string;
  batches: number;
  /** The GPU running this phase's batches (their spans, overlaps counted once). */
  busyMs: number;
  /** Gaps before this phase's batches in which no batch ran. */
  idleMs: number;
  /** The largest such gaps, longest first, each with the first command of the batch that ended it. */
  longestGaps: { ms: number; before: string }[];
}

interface BatchSpan {
  phase: string;
  first: string;
  begin: bigint;
  end: bigint;
}

export class Timeline {
  private readonly querySet: GPUQuerySet;
  private readonly resolveBuffer: GPUBuffer;
  private next = 0;
  private current: { batch: number; phase: string } | null = null;
  /** Batches recorded but not yet submitted, then mapped: their reads. */
  private pending: { batch: number; read: GPUBuffer; phase: string; first: string }[] = [];
  private readonly spans: (BatchSpan & { batch: number })[] = [];
  private readonly inflight: Promise<void>[] = [];
  /** Batches numbered below this were recorded before the last reset. */
  private from = 0;

  constructor(private readonly device: GPUDevice) {
    this.querySet = device.createQuerySet({ type: 'timestamp', count: 2 * RING_BATCHES, label: 'timeline' });
    this.resolveBuffer = device.createBuffer({ size: RING_BATCHES * SLOT_BYTES, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC, label: 'timeline resolve' });
  }

  /** The first command of a new batch: its start timestamp. */
  begin(encoder: GPUCommandEncoder, phase: string): void {
    const batch = this.next++;
    this.current = { batch, phase: phase || 'other' };
    const slot = batch % RING_BATCHES;
    encoder.beginComputePass({ label: 'timeline begin', timestampWrites: { querySet: this.querySet, beginningOfPassWriteIndex: 2 * slot } }).end();
  }

  /** The last commands of the batch (its end timestamp and the copy out); `first` names its first kernel. */
  end(encoder: GPUCommandEncoder, first: string): void {
    const c = this.current;
    if (!c) return;
    this.current = null;
    const slot = c.batch % RING_BATCHES;
    encoder.beginComputePass({ label: 'timeline end', timestampWrites: { querySet: this.querySet, endOfPassWriteIndex: 2 * slot + 1 } }).end();
    encoder.resolveQuerySet(this.querySet, 2 * slot, 2, this.resolveBuffer, slot * SLOT_BYTES);
    const read = this.device.createBuffer({ size: 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST, label: 'timeline read' });
    encoder.copyBufferToBuffer(this.resolveBuffer, slot * SLOT_BYTES, read, 0, 16);
    this.pending.push({ batch: c.batch, read, phase: c.phase, first });
  }

  /** The open batch was dropped unsubmitted (Gpu.discardBatch). */
  discard(): void {
    this.current = null;
  }

  /** After the submit: map the batch's two timestamps. */
  collect(): void {
    for (const p of this.pending.splice(0)) {
      this.inflight.push(
        p.read.mapAsync(GPUMapMode.READ).then(() => {
          const t = new BigInt64Array(p.read.getMappedRange());
          if (p.batch >= this.from) this.spans.push({ batch: p.batch, phase: p.phase, first: p.first, begin: t[0]!, end: t[1]! });
          p.read.destroy();
        }),
      );
    }
  }

  /** Busy and idle time per phase since the last reset (the gap before the first batch is not counted). */
  async results(): Promise<PhaseTime[]> {
    await Promise.all(this.inflight.splice(0));
    const spans = [...this.spans].sort((a, b) => (a.begin < b.begin ? -1 : a.begin > b.begin ? 1 : 0));
    const byPhase = new Map<string, { batches: number; busy: number; idle: number; gaps: { ms: number; before: string }[] }>();
    let reach: bigint | null = null;
    for (const s of spans) {
      const e = byPhase.get(s.phase) ?? { batches: 0, busy: 0, idle: 0, gaps: [] };
      byPhase.set(s.phase, e);
      e.batches++;
      const end = s.end > s.begin ? s.end : s.begin;
      if (reach === null || s.begin >= reach) {
        if (reach !== null) {
          const ms = Number(s.begin - reach) / 1e6;
          e.idle += ms;
          e.gaps.push({ ms, before: s.first });
        }
        e.busy += Number(end - s.begin) / 1e6;
        reach = end;
      } else if (end > reach) {
        e.busy += Number(end - reach) / 1e6;
        reach = end;
      }
    }
    return [...byPhase].map(([phase, e]) => ({
      phase,
      batches: e.batches,
      busyMs: e.busy,
      idleMs: e.idle,
      longestGaps: e.gaps.sort((a, b) => b.ms - a.ms).slice(0, 5),
    }));
  }

  /** Forgets every batch recorded so far (also those whose timestamps are still on their way). */
  reset(): void {
    this.from = this.next;
    this.spans.length = 0;
  }
}
