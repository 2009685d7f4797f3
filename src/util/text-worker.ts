// A worker started from JavaScript text, the same way under every runtime: a worker_threads `eval`
// worker under Node, a module Web Worker from a Blob URL under Deno and in the browser. The code sandbox
// (src/tasks/code) and the math grader's symbolic checker (src/tasks/math) run their workers this way,
// so a worker needs no file of its own beside the sources or the bundle.

export interface TextWorkerPort<In, Out> {
  post(m: In): void;
  onMessage(f: (m: Out) => void): void;
  /** Called once, when the worker dies on its own (uncaught error, out of JS heap, exit). */
  onDeath(f: (why: string) => void): void;
  /** Stops the worker now, whatever it is doing; no callback fires afterwards. */
  terminate(): void;
}

export type Runtime = 'node' | 'deno' | 'browser';

export function runtime(): Runtime {
  const g = globalThis as { Deno?: unknown; process?: { versions?: { node?: string } }; window?: unknown };
  if (g.Deno) return 'deno';
  if (g.process?.versions?.node && typeof g.window === 'undefined') return 'node';
  return 'browser';
}

export interface TextWorkerOptions {
  /** The worker's name (browser devtools, Deno). */
  name: string;
  /** Node only: the worker's JavaScript heap limit (MiB). */
  jsHeapMb?: number;
}

/**
 * Starts a worker running `source`. Under Node the text runs as a CommonJS script (`require` is a local
 * there) and the worker does not keep the process alive; elsewhere it runs as a module worker.
 */
export async function spawnTextWorker<In, Out>(source: string, opts: TextWorkerOptions): Promise<TextWorkerPort<In, Out>> {
  if (runtime() === 'node') {
    const { Worker } = await import('node:worker_threads');
    const w = new Worker(source, {
      eval: true,
      ...(opts.jsHeapMb === undefined ? {} : { resourceLimits: { maxOldGenerationSizeMb: opts.jsHeapMb, maxYoungGenerationSizeMb: 32 } }),
      stdout: true,
      stderr: true,
    });
    w.stdout.resume();
    w.stderr.resume();
    w.unref();
    let dead = false;
    return {
      post: (m) => w.postMessage(m),
      onMessage: (f) => w.on('message', (m: Out) => {
        if (!dead) f(m);
      }),
      onDeath: (f) => {
        const die = (why: string) => {
          if (!dead) {
            dead = true;
            f(why);
          }
        };
        w.on('error', (e: Error) => die(`${e.name}: ${e.message}`));
        w.on('exit', (code: number) => die(`exited with code ${code}`));
      },
      terminate: () => {
        dead = true;
        void w.terminate();
      },
    };
  }
  const url = URL.createObjectURL(new Blob([source], { type: 'text/javascript' }));
  const w = new Worker(url, { type: 'module', name: opts.name });
  let dead = false;
  return {
    post: (m) => w.postMessage(m),
    onMessage: (f) => w.addEventListener('message', (e) => {
      if (!dead) f(e.data as Out);
    }),
    onDeath: (f) => {
      w.addEventListener('error', (e) => {
        e.preventDefault();
        if (!dead) {
          dead = true;
          f(e.message || 'worker error');
        }
      });
    },
    terminate: () => {
      dead = true;
      w.terminate();
      URL.revokeObjectURL(url);
    },
  };
}
