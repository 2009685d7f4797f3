// The symbolic checker's worker: compute-engine comparisons (symbolic.ts) one message at a time.
// scripts/embed-math-worker.mjs bundles this file, compute-engine included, into the text of
// src/generated/math-worker.ts; symbolic-host.ts starts a worker from that text (src/util/text-worker.ts),
// so the worker runs the same under Node, Deno, the browser and the bundled CLI. The host terminates a
// worker that passes its time limit: compute-engine does not stop some evaluations (huge powers) itself.
import { symbolicEqual, type SymbolicVerdict, warmUpSymbolic } from './symbolic.ts';

/** host -> worker. */
export interface SymbolicRequest {
  id: number;
  a: string;
  b: string;
  timeoutMs: number;
}

/** worker -> host. */
export type SymbolicReply = { type: 'ready' } | { type: 'init-failed'; message: string } | { type: 'verdict'; id: number; verdict: SymbolicVerdict };

type Port = { post(m: SymbolicReply): void; listen(f: (m: SymbolicRequest) => void): void };

function port(): Port {
  const g = globalThis as unknown as Record<string, unknown>;
  // symbolic-host.ts's prologue hands Node's CommonJS `require` over (absent elsewhere).
  const nodeRequire = g.__troupeRequire as ((id: string) => Record<string, unknown>) | undefined;
  delete g.__troupeRequire;
  if (nodeRequire) {
    const p = nodeRequire('node:worker_threads').parentPort as { postMessage(m: unknown): void; on(e: 'message', f: (m: SymbolicRequest) => void): void };
    return { post: (m) => p.postMessage(m), listen: (f) => p.on('message', f) };
  }
  const scope = globalThis as unknown as { postMessage(m: unknown): void; onmessage: ((e: MessageEvent) => void) | null };
  return {
    post: (m) => scope.postMessage(m),
    listen: (f) => {
      scope.onmessage = (e) => f(e.data as SymbolicRequest);
    },
  };
}

const p = port();
p.listen((m) => p.post({ type: 'verdict', id: m.id, verdict: symbolicEqual(m.a, m.b, m.timeoutMs) }));
try {
  warmUpSymbolic();
  p.post({ type: 'ready' });
} catch (e) {
  p.post({ type: 'init-failed', message: e instanceof Error ? `${e.name}: ${e.message}` : String(e) });
}
