// The math grader's symbolic check, off the caller's thread: one worker (symbolic-worker.ts, started from
// the embedded text in src/generated/math-worker.ts) answers comparisons in turn. Each comparison has a
// hard time limit: compute-engine honours its own deadline only between steps (a power such as 9^{9^{9}}
// runs for minutes inside one), so when the limit passes the host terminates the worker, answers
// 'timeout', and the next comparison starts a fresh worker. The caller's event loop is never blocked.
import { MATH_WORKER_SOURCE } from '../../generated/math-worker.ts';
import { spawnTextWorker, type TextWorkerPort } from '../../util/text-worker.ts';
import type { SymbolicVerdict } from './symbolic.ts';
import type { SymbolicReply, SymbolicRequest } from './symbolic-worker.ts';

export class SymbolicWorkerError extends Error {
  override name = 'SymbolicWorkerError';
}

export interface SymbolicCheckerOptions {
  /** Starting a worker (loading compute-engine) may take this long (ms); not charged to a check's limit. */
  startTimeoutMs?: number;
  /** Node only: the worker's JavaScript heap limit (MiB): an answer that bloats the heap kills the worker, not the host. */
  jsHeapMb?: number;
}

// Node runs the text as a CommonJS script: hand its `require` to the worker (symbolic-worker.ts port()).
const SOURCE = `globalThis.__troupeRequire = typeof require === 'function' ? require : undefined;\n${MATH_WORKER_SOURCE}`;

/** 'crashed': the worker died during the check (out of heap on a huge answer). */
export type CheckVerdict = SymbolicVerdict | 'crashed';

type Settle = (v: SymbolicVerdict | { died: string }) => void;

class Live {
  readonly ready: Promise<void>;
  dead: string | null = null;
  pending: { id: number; settle: Settle } | null = null;
  constructor(readonly port: TextWorkerPort<SymbolicRequest, SymbolicReply>, startTimeoutMs: number) {
    this.ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new SymbolicWorkerError(`the symbolic-check worker did not start within ${startTimeoutMs} ms`));
        this.kill('start timeout');
      }, startTimeoutMs);
      port.onMessage((m) => {
        if (m.type === 'ready') {
          clearTimeout(timer);
          resolve();
        } else if (m.type === 'init-failed') {
          clearTimeout(timer);
          reject(new SymbolicWorkerError(`the symbolic-check worker failed to start: ${m.message}`));
          this.kill('init failed');
        } else if (this.pending?.id === m.id) {
          const p = this.pending;
          this.pending = null;
          p.settle(m.verdict);
        }
      });
      port.onDeath((why) => {
        this.dead = why;
        clearTimeout(timer);
        reject(new SymbolicWorkerError(`the symbolic-check worker died while starting: ${why}`));
        const p = this.pending;
        this.pending = null;
        p?.settle({ died: why });
      });
    });
    this.ready.catch(() => {});
  }
  kill(why: string): void {
    this.dead ??= why;
    this.port.terminate();
  }
}

/** A symbolic-equivalence checker in a worker. Checks run one at a time, in call order. */
export class SymbolicChecker {
  private live: Live | null = null;
  private queue: Promise<unknown> = Promise.resolve();
  private nextId = 1;
  private closed = false;
  private readonly startTimeoutMs: number;
  private readonly jsHeapMb: number;
  /** Workers started so far (the first, plus one after each timeout or death). */
  started = 0;
  /** Workers terminated because a check passed its limit. */
  killed = 0;

  constructor(opts: SymbolicCheckerOptions = {}) {
    this.startTimeoutMs = opts.startTimeoutMs ?? 60_000;
    this.jsHeapMb = opts.jsHeapMb ?? 512;
  }

  /** Starts the worker now (otherwise the first check starts it). */
  async warm(): Promise<void> {
    await (await this.worker()).ready;
  }

  /**
   * Compares two LaTeX expressions; 'timeout' when no verdict came within `timeoutMs` of the worker
   * taking the check (time spent waiting for a worker to start or for earlier checks is not charged).
   */
  check(a: string, b: string, timeoutMs: number): Promise<CheckVerdict> {
    const run = this.queue.then(() => this.run(a, b, timeoutMs));
    this.queue = run.catch(() => {});
    return run;
  }

  /** Terminates the worker; later checks throw. */
  close(): void {
    this.closed = true;
    this.live?.kill('closed');
    this.live = null;
  }

  private async worker(): Promise<Live> {
    if (this.closed) throw new SymbolicWorkerError('SymbolicChecker: used after close()');
    if (this.live === null || this.live.dead !== null) {
      this.live = new Live(await spawnTextWorker<SymbolicRequest, SymbolicReply>(SOURCE, { name: 'troupe-math-symbolic', jsHeapMb: this.jsHeapMb }), this.startTimeoutMs);
      this.started++;
    }
    return this.live;
  }

  private async run(a: string, b: string, timeoutMs: number): Promise<CheckVerdict> {
    if (!(timeoutMs > 0)) return 'timeout';
    const w = await this.worker();
    try {
      await w.ready;
    } catch (e) {
      if (this.live === w) this.live = null;
      throw e;
    }
    if (w.dead !== null) return this.run(a, b, timeoutMs);
    const id = this.nextId++;
    const reply = new Promise<SymbolicVerdict | { died: string }>((settle) => {
      w.pending = { id, settle };
    });
    const timer = setTimeout(() => {
      if (w.pending?.id !== id) return;
      const p = w.pending;
      w.pending = null;
      this.killed++;
      w.kill(`a check passed its ${timeoutMs} ms limit`);
      p.settle('timeout');
    }, timeoutMs);
    w.port.post({ id, a, b, timeoutMs });
    const r = await reply;
    clearTimeout(timer);
    // A worker that died mid-check (out of heap on a huge answer): that answer is not gradable symbolically.
    return typeof r === 'object' ? 'crashed' : r;
  }
}

let shared: SymbolicChecker | null = null;

/** The process-wide checker gradeMath uses by default. */
export function sharedSymbolicChecker(): SymbolicChecker {
  shared ??= new SymbolicChecker();
  return shared;
}

/** Terminates the shared checker's worker (a later gradeMath starts a new one). */
export function closeSharedSymbolicChecker(): void {
  shared?.close();
  shared = null;
}
