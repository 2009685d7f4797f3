// A pool of Pyodide workers that run untrusted Python programs, one test at a time, with a time limit
// (an interrupt through a SharedArrayBuffer, then termination of a worker that does not answer), a
// memory cap and an output cap. A worker that was killed, tampered with or bloated is replaced; the
// host never runs program code itself.
import { SandboxError } from './errors.ts';
import { HARNESS_PY } from './harness-py.ts';
import { runtime, spawnTextWorker, type TextWorkerPort } from '../../util/text-worker.ts';
import { sandboxWorkerMain, type InitMessage, type RunMessage, type RunStatus, type WorkerReply } from './worker.ts';

export interface SandboxOptions {
  /** Workers in the pool (default 2). */
  workers?: number;
  /** Directory (URL, or path under Node) holding pyodide.mjs; default: the installed npm package. */
  pyodideIndexUrl?: string;
  /** After a timeout's interrupt, how long a worker has to answer before it is terminated (ms). */
  graceMs?: number;
  /** Replace a worker whose heap grew beyond this after a program (MiB). */
  recycleHeapMb?: number;
  /** Replace a worker after this many programs, bounding any state a program left behind. */
  maxProgramsPerWorker?: number;
  /** Node only: the worker's JavaScript heap limit (MiB); Pyodide's wasm heap is capped per run. */
  jsHeapMb?: number;
  /** Loading Pyodide in a fresh worker may take this long (ms). */
  startTimeoutMs?: number;
}

export interface RunLimits {
  timeoutMs: number;
  memoryMb: number;
  outputLimitBytes: number;
}

export type ProgramInput = { mode: 'stdin'; stdin: string } | { mode: 'call'; fnName: string; argsJson: string };

export interface RunOutcome {
  status: RunStatus | 'killed' | 'crashed';
  error: string | null;
  value: string | null;
  stdout: string;
  blocked: string[];
  ms: number;
}

/** One program's exclusive use of a worker, for its tests in sequence. */
export interface SandboxSession {
  run(code: string, input: ProgramInput, limits: RunLimits): Promise<RunOutcome>;
}

type WorkerPort = TextWorkerPort<InitMessage | RunMessage, WorkerReply>;

// The prologue gives the worker Node's `require` (a CommonJS local there, absent elsewhere), import()
// (which test runners and bundlers rewrite inside function text) and the __name() helper that
// name-keeping bundlers wrap nested functions in.
const WORKER_SOURCE = [
  `globalThis.__sandboxRequire = typeof require === 'function' ? require : undefined;`,
  'globalThis.__sandboxImport = (url) => import(url);',
  'var __name = (f) => f;',
  `(${sandboxWorkerMain.toString()})();`,
].join('\n');

function spawnPort(jsHeapMb: number): Promise<WorkerPort> {
  return spawnTextWorker(WORKER_SOURCE, { name: 'troupe-code-sandbox', jsHeapMb });
}

async function defaultPyodidePaths(override?: string): Promise<{ moduleUrl: string; indexUrl: string }> {
  if (override) {
    const dir = override.endsWith('/') ? override : `${override}/`;
    const isUrl = /^[a-z]+:/i.test(dir);
    const moduleUrl = isUrl ? new URL('pyodide.mjs', dir).href : new URL(`file://${dir}pyodide.mjs`).href;
    const indexUrl = isUrl && runtime() !== 'browser' && dir.startsWith('file:') ? decodeURIComponent(new URL(dir).pathname) : dir;
    return { moduleUrl, indexUrl };
  }
  if (runtime() !== 'browser') {
    // Module resolution finds the package beside a bundle too (scripts/bundle.mjs copies it there).
    const { createRequire } = await import('node:module');
    const { dirname } = await import('node:path');
    const { pathToFileURL } = await import('node:url');
    const dir = dirname(createRequire(import.meta.url).resolve('pyodide')) + '/';
    // Pyodide takes its Node path under Deno as well, and wants a file path there.
    return { moduleUrl: pathToFileURL(dir + 'pyodide.mjs').href, indexUrl: dir };
  }
  // Through a variable: Vite rewrites `new URL('literal', import.meta.url)` to the package's entry file.
  const fromHere = '../../../node_modules/pyodide/';
  const dir = new URL(fromHere, import.meta.url).href;
  return { moduleUrl: dir + 'pyodide.mjs', indexUrl: dir };
}

type ResultReply = Extract<WorkerReply, { type: 'result' }>;
/** How a run ended for the host: the worker's reply, its termination by the host, or its own death. */
type Settled = ResultReply | { type: 'killed' } | { type: 'died'; why: string };

class PooledWorker {
  readonly ready: Promise<void>;
  programs = 0;
  /** Set when the worker must not take another program. */
  retire = false;
  private dead: string | null = null;
  private readonly interrupt: Int32Array;
  private pending: { id: number; resolve: (r: Settled) => void } | null = null;
  private nextId = 1;

  private constructor(
    private readonly port: WorkerPort,
    paths: { moduleUrl: string; indexUrl: string },
    startTimeoutMs: number,
  ) {
    const sab = new SharedArrayBuffer(4);
    this.interrupt = new Int32Array(sab);
    this.ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new SandboxError(`Pyodide did not load within ${startTimeoutMs} ms`)), startTimeoutMs);
      port.onMessage((m) => {
        if (m.type === 'ready') {
          clearTimeout(timer);
          resolve();
        } else if (m.type === 'init-failed') {
          clearTimeout(timer);
          reject(new SandboxError(`Pyodide failed to load in the sandbox worker (${paths.moduleUrl}): ${m.message}`));
        } else if (this.pending && m.id === this.pending.id) {
          const p = this.pending;
          this.pending = null;
          p.resolve(m);
        }
      });
      port.onDeath((why) => {
        this.dead = why;
        clearTimeout(timer);
        reject(new SandboxError(`the sandbox worker died while loading Pyodide: ${why}`));
        const p = this.pending;
        this.pending = null;
        p?.resolve({ type: 'died', why });
      });
    });
    this.ready.catch(() => {}); // observed by acquire(); never an unhandled rejection
    port.post({ type: 'init', pyodideModuleUrl: paths.moduleUrl, indexUrl: paths.indexUrl, harnessSource: HARNESS_PY, interrupt: sab });
  }

  static async start(paths: { moduleUrl: string; indexUrl: string }, o: Required<SandboxOptions>): Promise<PooledWorker> {
    return new PooledWorker(await spawnPort(o.jsHeapMb), paths, o.startTimeoutMs);
  }

  get alive(): boolean {
    return this.dead === null;
  }

  async run(code: string, input: ProgramInput, limits: RunLimits, graceMs: number, recycleHeapBytes: number): Promise<RunOutcome> {
    const t0 = performance.now();
    const elapsed = () => Math.round(performance.now() - t0);
    if (this.dead !== null) {
      return { status: 'crashed', error: `the sandbox worker died: ${this.dead}`, value: null, stdout: '', blocked: [], ms: 0 };
    }
    const id = this.nextId++;
    Atomics.store(this.interrupt, 0, 0);
    const reply = new Promise<Settled>((resolve) => {
      this.pending = { id, resolve };
    });
    this.port.post({
      type: 'run',
      id,
      code,
      mode: input.mode,
      stdin: input.mode === 'stdin' ? input.stdin : '',
      argsJson: input.mode === 'call' ? input.argsJson : '[]',
      fnName: input.mode === 'call' ? input.fnName : '',
      memoryMb: limits.memoryMb,
      outputLimitBytes: limits.outputLimitBytes,
    });
    let interrupted = false;
    const interruptTimer = setTimeout(() => {
      interrupted = true;
      Atomics.store(this.interrupt, 0, 2); // SIGINT: Python raises KeyboardInterrupt
    }, limits.timeoutMs);
    const killTimer = setTimeout(() => {
      if (this.pending?.id !== id) return;
      const p = this.pending;
      this.pending = null;
      this.kill('did not stop after its time limit');
      p.resolve({ type: 'killed' });
    }, limits.timeoutMs + graceMs);
    const r = await reply;
    clearTimeout(interruptTimer);
    clearTimeout(killTimer);
    if (r.type === 'killed') {
      return { status: 'killed', error: `no response ${graceMs} ms after the interrupt: the worker was terminated`, value: null, stdout: '', blocked: [], ms: elapsed() };
    }
    if (r.type === 'died') {
      this.retire = true;
      return { status: 'crashed', error: `the sandbox worker died: ${r.why}`, value: null, stdout: '', blocked: [], ms: elapsed() };
    }
    if (r.recycle || r.heapBytes > recycleHeapBytes) this.retire = true;
    let { status, error } = r;
    if (status === 'ok' && interrupted) status = 'timeout'; // finished, but past its limit
    if (status === 'timeout' && !interrupted) {
      // A KeyboardInterrupt the host did not send cannot be this run's timeout.
      status = 'error';
      error ??= 'KeyboardInterrupt';
    }
    return { status, error, value: r.value, stdout: r.stdout, blocked: r.blocked, ms: elapsed() };
  }

  kill(why: string): void {
    if (this.dead === null) this.dead = why;
    this.retire = true;
    this.port.terminate();
  }
}

/** A pool of sandbox workers. Programs queue for a free worker; a retired worker is replaced lazily. */
export class CodeSandbox {
  private readonly options: Required<SandboxOptions>;
  private readonly slots: (PooledWorker | null)[];
  private readonly busy: boolean[];
  private readonly waiting: (() => void)[] = [];
  private paths: Promise<{ moduleUrl: string; indexUrl: string }> | null = null;
  private closed = false;
  /** Workers started so far (the first `workers` of them, plus replacements). */
  started = 0;

  constructor(options: SandboxOptions = {}) {
    this.options = {
      workers: options.workers ?? 2,
      pyodideIndexUrl: options.pyodideIndexUrl ?? '',
      graceMs: options.graceMs ?? 2000,
      recycleHeapMb: options.recycleHeapMb ?? 256,
      maxProgramsPerWorker: options.maxProgramsPerWorker ?? 200,
      jsHeapMb: options.jsHeapMb ?? 256,
      startTimeoutMs: options.startTimeoutMs ?? 60_000,
    };
    if (!(this.options.workers >= 1)) throw new SandboxError(`CodeSandbox: workers must be >= 1 (got ${options.workers})`);
    if (typeof SharedArrayBuffer === 'undefined') {
      throw new SandboxError('CodeSandbox needs SharedArrayBuffer to interrupt programs: serve the page cross-origin isolated (COOP same-origin, COEP require-corp)');
    }
    this.slots = new Array<PooledWorker | null>(this.options.workers).fill(null);
    this.busy = new Array<boolean>(this.options.workers).fill(false);
  }

  /** Starts every worker now (otherwise they start on first use). */
  async warm(): Promise<void> {
    await Promise.all(this.slots.map((_, i) => this.workerAt(i)));
  }

  /** Runs `body` with exclusive use of one worker; the worker is released (or replaced) afterwards. */
  async withSession<T>(body: (session: SandboxSession) => Promise<T>): Promise<T> {
    const index = await this.acquire();
    try {
      const worker = await this.workerAt(index);
      worker.programs++;
      const session: SandboxSession = {
        run: (code, input, limits) => worker.run(code, input, limits, this.options.graceMs, this.options.recycleHeapMb * 1024 * 1024),
      };
      try {
        return await body(session);
      } finally {
        if (worker.retire || !worker.alive || worker.programs >= this.options.maxProgramsPerWorker) {
          worker.kill('retired');
          this.slots[index] = null;
        }
      }
    } finally {
      this.release(index);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    for (let i = 0; i < this.slots.length; i++) {
      this.slots[i]?.kill('sandbox closed');
      this.slots[i] = null;
    }
    for (const w of this.waiting.splice(0)) w();
  }

  private async workerAt(index: number): Promise<PooledWorker> {
    let w = this.slots[index];
    if (!w || !w.alive) {
      this.paths ??= defaultPyodidePaths(this.options.pyodideIndexUrl || undefined);
      w = await PooledWorker.start(await this.paths, this.options);
      this.slots[index] = w;
      this.started++;
    }
    try {
      await w.ready;
    } catch (e) {
      w.kill('failed to start');
      this.slots[index] = null;
      throw e;
    }
    return w;
  }

  private async acquire(): Promise<number> {
    for (;;) {
      if (this.closed) throw new SandboxError('CodeSandbox: used after close()');
      const free = this.busy.indexOf(false);
      if (free >= 0) {
        this.busy[free] = true;
        return free;
      }
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
  }

  private release(index: number): void {
    this.busy[index] = false;
    this.waiting.shift()?.();
  }
}
