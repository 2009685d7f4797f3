// The sandbox worker: loads Pyodide, hardens its own JavaScript realm, then runs one program per
// message through the Python harness (harness-py.ts). sandbox.ts starts it from the text of
// `sandboxWorkerMain` (worker_threads `eval` under Node, a module Web Worker from a Blob elsewhere), so
// the function must be self-contained: no imports, no references to anything outside its body.

/** host -> worker, first message. */
export interface InitMessage {
  type: 'init';
  /** URL of pyodide.mjs. */
  pyodideModuleUrl: string;
  /** Pyodide's indexURL: a directory path under Node, a URL elsewhere. */
  indexUrl: string;
  harnessSource: string;
  /** Int32Array[1] over a SharedArrayBuffer: the host stores 2 (SIGINT) to interrupt a program. */
  interrupt: SharedArrayBuffer;
}

/** host -> worker: run one program on one test. */
export interface RunMessage {
  type: 'run';
  id: number;
  code: string;
  mode: 'stdin' | 'call';
  stdin: string;
  /** mode 'call': the JSON list of arguments, and the function (or Solution method) to call. */
  argsJson: string;
  fnName: string;
  memoryMb: number;
  outputLimitBytes: number;
}

export type RunStatus = 'ok' | 'error' | 'timeout' | 'memory' | 'output-limit';

/** worker -> host. */
export type WorkerReply =
  | { type: 'ready'; loadMs: number }
  | { type: 'init-failed'; message: string }
  | {
      type: 'result';
      id: number;
      status: RunStatus;
      error: string | null;
      /** mode 'call': the result as JSON text. */
      value: string | null;
      stdout: string;
      /** Blocked operations the program attempted. */
      blocked: string[];
      /** True when this interpreter should not run another program (tampering, a fatal error, a grown heap). */
      recycle: boolean;
      heapBytes: number;
    };

export function sandboxWorkerMain(): void {
  type Reply = WorkerReply;
  type PyProxyFn = (...args: unknown[]) => unknown;
  const g = globalThis as unknown as Record<string, unknown>;
  const isNode = typeof (g.process as { versions?: { node?: string } } | undefined)?.versions?.node === 'string' && !g.Deno;
  let post: (m: Reply) => void;
  let listen: (handler: (m: InitMessage | RunMessage) => void) => void;
  // Node's eval workers are CommonJS scripts; sandbox.ts's prologue hands their `require` over here.
  const nodeRequire = isNode ? (g.__sandboxRequire as (id: string) => Record<string, unknown>) : null;
  // import() too comes from the prologue: test runners and bundlers rewrite it in this function's text.
  const importModule = g.__sandboxImport as (url: string) => Promise<unknown>;
  delete g.__sandboxRequire;
  delete g.__sandboxImport;
  if (nodeRequire) {
    const port = nodeRequire('node:worker_threads').parentPort as {
      postMessage(m: unknown): void;
      on(e: 'message', f: (m: InitMessage | RunMessage) => void): void;
    };
    post = (m) => port.postMessage(m);
    listen = (handler) => port.on('message', handler);
  } else {
    const scope = globalThis as unknown as { postMessage(m: unknown): void; onmessage: ((e: MessageEvent) => void) | null };
    const send = scope.postMessage.bind(scope);
    post = (m) => send(m);
    listen = (handler) => {
      scope.onmessage = (e) => handler(e.data as InitMessage | RunMessage);
    };
  }

  const encoder = new TextEncoder();
  let stdinBytes = new Uint8Array(0);
  let stdinPos = 0;
  let outChunks: Uint8Array[] = [];
  let outBytes = 0;
  let outLimit = 0;
  let outOverflow = false;
  let memoryCapBytes = 0;
  let memory: WebAssembly.Memory | null = null;
  let runHarness: PyProxyFn | null = null;
  let broken = false;
  const MiB = 1024 * 1024;

  // Memory cap: Emscripten grows the heap through Memory.prototype.grow and reports a failure to
  // malloc, which Python raises as MemoryError.
  const grow = WebAssembly.Memory.prototype.grow;
  WebAssembly.Memory.prototype.grow = function (this: WebAssembly.Memory, delta: number): number {
    memory = this;
    if (memoryCapBytes > 0 && this.buffer.byteLength + delta * 65536 > memoryCapBytes) {
      throw new RangeError('sandbox memory cap reached');
    }
    return grow.call(this, delta);
  };

  type Require = ((id: string) => Record<string, unknown>) & { resolve(id: string): string; cache: Record<string, { exports: unknown } | undefined> };

  // Node and Deno: Pyodide takes its Node path there, where Emscripten's system() spawns a host shell
  // and its sockets open real connections through the `ws` package. Both come through require(), so
  // this worker's copies of those modules are made to refuse.
  async function denyHostAccess(pyodideModuleUrl: string): Promise<void> {
    let req: Require;
    if (nodeRequire) {
      req = (nodeRequire('node:module').createRequire as (u: string) => Require)(pyodideModuleUrl);
    } else if (g.Deno) {
      const { createRequire } = (await importModule('node:module')) as { createRequire(u: string): Require };
      req = createRequire(pyodideModuleUrl);
    } else {
      return;
    }
    const refuse = () => {
      throw new Error('host processes and sockets are not available in the sandbox');
    };
    const childProcess = req('node:child_process');
    for (const name of ['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork']) childProcess[name] = refuse;
    let wsPath: string;
    try {
      wsPath = req.resolve('ws');
    } catch {
      return; // not installed: Emscripten's require('ws') fails, and the socket with it
    }
    req(wsPath);
    const entry = req.cache[wsPath];
    if (entry) entry.exports = refuse;
  }

  function hardenRealm(): void {
    // Without code generation a leaked JS object cannot be turned into globalThis
    // (`x.constructor.constructor('return globalThis')()`).
    const refuse = function () {
      throw new Error('code generation is disabled in the sandbox');
    };
    const prototypes = [
      Function.prototype,
      Object.getPrototypeOf(async function () {}),
      Object.getPrototypeOf(function* () {}),
      Object.getPrototypeOf(async function* () {}),
    ];
    for (const proto of prototypes) Object.defineProperty(proto, 'constructor', { value: refuse, writable: false, configurable: false });
    const names = ['eval', 'Function', 'fetch', 'XMLHttpRequest', 'WebSocket', 'WebSocketStream', 'WebTransport', 'EventSource',
      'RTCPeerConnection', 'importScripts', 'Worker', 'SharedWorker', 'BroadcastChannel', 'indexedDB', 'caches', 'Deno',
      'process', 'require', 'module', 'Buffer'];
    // Pyodide reports its own fatal errors on the console; the host learns of them from the reply.
    const silent = () => {};
    for (const level of ['log', 'info', 'warn', 'error', 'debug', 'trace'] as const) console[level] = silent;
    for (const name of names) {
      try {
        delete g[name];
      } catch {
        // non-configurable: overwritten below
      }
      if (name in g) {
        try {
          Object.defineProperty(g, name, { value: undefined, writable: false, configurable: false });
        } catch {
          // Cannot be removed; the code-generation block above still stands.
        }
      }
    }
  }

  async function init(m: InitMessage): Promise<void> {
    const t0 = performance.now();
    await denyHostAccess(m.pyodideModuleUrl);
    const { loadPyodide } = (await importModule(m.pyodideModuleUrl)) as {
      loadPyodide(o: Record<string, unknown>): Promise<Record<string, unknown>>;
    };
    const quiet = () => {};
    const py = (await loadPyodide({
      indexURL: m.indexUrl,
      jsglobals: Object.create(null),
      stdout: quiet,
      stderr: quiet,
      env: { HOME: '/sandbox', PYTHONHASHSEED: '0' },
    })) as {
      setStdin(o: object): void;
      setStdout(o: object): void;
      setStderr(o: object): void;
      setInterruptBuffer(b: Int32Array): void;
      unregisterJsModule(name: string): void;
      runPython(code: string, o?: object): unknown;
      globals: { get(name: string): PyProxyFn };
    };
    py.setStdin({
      isatty: false,
      read(buffer: Uint8Array): number {
        const n = Math.min(buffer.length, stdinBytes.length - stdinPos);
        buffer.set(stdinBytes.subarray(stdinPos, stdinPos + n));
        stdinPos += n;
        return n;
      },
    });
    py.setStdout({
      isatty: false,
      write(buffer: Uint8Array): number {
        if (outBytes + buffer.length > outLimit) {
          outOverflow = true;
          throw new Error('output limit reached');
        }
        outChunks.push(buffer.slice());
        outBytes += buffer.length;
        return buffer.length;
      },
    });
    py.setStderr({ isatty: false, write: (buffer: Uint8Array) => buffer.length });
    py.setInterruptBuffer(new Int32Array(m.interrupt));
    const namespace = py.globals.get('dict')();
    runHarness = py.runPython(m.harnessSource, { globals: namespace }) as PyProxyFn;
    py.unregisterJsModule('js');
    py.unregisterJsModule('pyodide_js');
    hardenRealm();
    post({ type: 'ready', loadMs: Math.round(performance.now() - t0) });
  }

  function run(m: RunMessage): void {
    stdinBytes = encoder.encode(m.stdin);
    stdinPos = 0;
    outChunks = [];
    outBytes = 0;
    outLimit = m.outputLimitBytes;
    outOverflow = false;
    memoryCapBytes = m.memoryMb * MiB;
    let status: RunStatus = 'error';
    let error: string | null = null;
    let value: string | null = null;
    let blocked: string[] = [];
    let recycle = broken;
    if (broken || !runHarness) {
      error = 'the interpreter is unusable after an earlier fatal error';
    } else {
      try {
        const r = JSON.parse(runHarness(m.code, m.mode, m.argsJson, m.fnName) as string) as {
          status: RunStatus;
          error: string | null;
          value: string | null;
          blocked: string[];
          tainted: boolean;
        };
        ({ status, error, value, blocked } = r);
        recycle = r.tainted; // a blocked attempt changed nothing: the reset covers the rest
      } catch (e) {
        // Python errors that escaped the harness's own bookkeeping, or a fatal Pyodide error.
        const text = String((e as Error)?.message ?? e);
        if (/KeyboardInterrupt/.test(text)) status = 'timeout';
        else if (/MemoryError/.test(text)) status = 'memory';
        else if (/Maximum call stack size exceeded/.test(text)) error = 'RecursionError: stack overflow (maximum call stack size exceeded)';
        else error = 'sandbox: ' + text.slice(-300);
        recycle = true;
        broken = typeof (e as { type?: unknown })?.type !== 'string'; // not a PythonError: Pyodide itself failed
      }
    }
    if (value !== null && value.length > m.outputLimitBytes) outOverflow = true;
    if (outOverflow) {
      status = 'output-limit';
      error = `the output exceeded ${m.outputLimitBytes} bytes`;
    }
    const heapBytes = memory ? memory.buffer.byteLength : 0;
    const joined = new Uint8Array(outBytes);
    let offset = 0;
    for (const c of outChunks) {
      joined.set(c, offset);
      offset += c.length;
    }
    outChunks = [];
    const stdout = new TextDecoder('utf-8').decode(joined);
    post({ type: 'result', id: m.id, status, error, value, stdout, blocked, recycle, heapBytes });
  }

  listen((m) => {
    if (m.type === 'init') {
      init(m).catch((e: unknown) => post({ type: 'init-failed', message: String((e as Error)?.stack ?? e).slice(0, 2000) }));
    } else {
      run(m);
    }
  });
}
