// Code reward: the last fenced Python block of a response runs against every test in the sandbox;
// reward 1 only if all pass. Grading stops at the first failure, which the reason names.
import type { CodeTest, Grade } from '../types.ts';
import { SandboxError } from './errors.ts';
import { CodeSandbox, type ProgramInput, type RunOutcome } from './sandbox.ts';
import { extractLastCodeBlock } from './extract.ts';

export interface GradeCodeOptions {
  /** Per test (default 3000 ms). */
  perTestTimeoutMs?: number;
  /** For all tests of the response together (default 120000 ms). */
  totalTimeoutMs?: number;
  /** Cap on the interpreter's heap (default 512 MiB). */
  memoryMb?: number;
  /** Cap on a test's stdout (and a call's JSON result); default max(1 MiB, 2 x the expected output). */
  outputLimitBytes?: number;
  /** The pool to run in; default a shared one (see sharedCodeSandbox). */
  sandbox?: CodeSandbox;
}

export interface CodeGrade extends Grade {
  /** Tests that passed before the first failure (grading stops there). */
  passed: number;
  total: number;
}

let shared: CodeSandbox | null = null;

/** The pool gradeCode uses by default, created on first use with default options. */
export function sharedCodeSandbox(): CodeSandbox {
  shared ??= new CodeSandbox();
  return shared;
}

/** Terminates the shared pool's workers (a later gradeCode starts a new pool). */
export async function closeSharedCodeSandbox(): Promise<void> {
  const s = shared;
  shared = null;
  await s?.close();
}

export { extractLastCodeBlock };

/** Output lines with trailing whitespace removed, and trailing empty lines dropped. */
export function outputLines(text: string): string[] {
  const lines = text.replace(/\r\n?/g, '\n').split('\n').map((l) => l.trimEnd());
  while (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/** Deep equality of JSON values (object key order ignored). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    return a.length === bb.length && a.every((x, i) => jsonEqual(x, bb[i]));
  }
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  const keys = Object.keys(ao);
  return keys.length === Object.keys(bo).length && keys.every((k) => Object.hasOwn(bo, k) && jsonEqual(ao[k], bo[k]));
}

function clip(text: string, n = 120): string {
  const s = JSON.stringify(text);
  return s.length <= n ? s : `${s.slice(0, n)}...`;
}

function validate(tests: CodeTest[]): void {
  if (!Array.isArray(tests) || tests.length === 0) throw new SandboxError('gradeCode: the task has no tests');
  tests.forEach((t, i) => {
    if (t?.type === 'stdin') {
      if (typeof t.input !== 'string' || typeof t.output !== 'string') {
        throw new SandboxError(`gradeCode: test ${i + 1} (stdin) needs string input and output`);
      }
    } else if (t?.type === 'functional') {
      if (typeof t.fnName !== 'string' || !/^[A-Za-z_]\w*$/.test(t.fnName) || !Array.isArray(t.inputs)) {
        throw new SandboxError(`gradeCode: test ${i + 1} (functional) needs an identifier fnName and an inputs array`);
      }
    } else {
      throw new SandboxError(`gradeCode: test ${i + 1} has unknown type ${JSON.stringify((t as { type?: unknown })?.type)}`);
    }
  });
}

function describeFailure(outcome: RunOutcome, timeoutMs: number): string {
  switch (outcome.status) {
    case 'timeout':
    case 'killed':
      return `time limit (${timeoutMs} ms) exceeded${outcome.status === 'killed' ? ' (the worker was terminated)' : ''}`;
    case 'memory':
      return 'memory limit exceeded (MemoryError)';
    default:
      return outcome.error ?? outcome.status;
  }
}

/** The first difference between expected and actual output, or null when they match. */
function stdoutMismatch(expected: string, got: string): string | null {
  const want = outputLines(expected);
  const have = outputLines(got);
  for (let i = 0; i < Math.max(want.length, have.length); i++) {
    if (want[i] !== have[i]) {
      const w = want[i] === undefined ? '<end of output>' : clip(want[i]!);
      const h = have[i] === undefined ? '<end of output>' : clip(have[i]!);
      return `line ${i + 1}: expected ${w}, got ${h}`;
    }
  }
  return null;
}

function callMismatch(expected: unknown, valueJson: string | null): string | null {
  let got: unknown;
  try {
    got = JSON.parse(valueJson ?? '');
  } catch {
    return `the result is not JSON: ${clip(valueJson ?? '')}`;
  }
  return jsonEqual(expected, got) ? null : `expected ${clip(JSON.stringify(expected))}, got ${clip(JSON.stringify(got))}`;
}

export async function gradeCode(response: string, tests: CodeTest[], opts: GradeCodeOptions = {}): Promise<CodeGrade> {
  validate(tests);
  const total = tests.length;
  const code = extractLastCodeBlock(response);
  if (code === null || code.trim() === '') return { reward: 0, reason: 'no fenced Python code block in the response', passed: 0, total };
  const perTest = opts.perTestTimeoutMs ?? 3000;
  const budget = opts.totalTimeoutMs ?? 120_000;
  const memoryMb = opts.memoryMb ?? 512;
  if (!(perTest > 0) || !(budget > 0) || !(memoryMb >= 64)) {
    throw new SandboxError(`gradeCode: bad limits (perTestTimeoutMs ${perTest}, totalTimeoutMs ${budget}, memoryMb ${memoryMb} >= 64)`);
  }
  const sandbox = opts.sandbox ?? sharedCodeSandbox();
  return sandbox.withSession(async (session) => {
    let spent = 0;
    for (let i = 0; i < total; i++) {
      const t = tests[i]!;
      const label = `test ${i + 1}/${total} (${t.type})`;
      const left = budget - spent;
      if (left <= 0) return { reward: 0, reason: `${label}: total time limit (${budget} ms) exceeded`, passed: i, total };
      const timeoutMs = Math.min(perTest, left);
      const input: ProgramInput =
        t.type === 'stdin' ? { mode: 'stdin', stdin: t.input } : { mode: 'call', fnName: t.fnName, argsJson: JSON.stringify(t.inputs) };
      const expectedBytes = t.type === 'stdin' ? t.output.length : JSON.stringify(t.output).length;
      const outputLimitBytes = opts.outputLimitBytes ?? Math.max(1 << 20, 2 * expectedBytes + 4096);
      const outcome = await session.run(code, input, { timeoutMs, memoryMb, outputLimitBytes });
      spent += outcome.ms;
      if (outcome.status !== 'ok') {
        const why = describeFailure(outcome, timeoutMs);
        const totalHit = (outcome.status === 'timeout' || outcome.status === 'killed') && timeoutMs < perTest;
        return { reward: 0, reason: `${label}: ${totalHit ? `total time limit (${budget} ms) exceeded` : why}`, passed: i, total };
      }
      const mismatch = t.type === 'stdin' ? stdoutMismatch(t.output, outcome.stdout) : callMismatch(t.output, outcome.value);
      if (mismatch !== null) return { reward: 0, reason: `${label}: wrong answer: ${mismatch}`, passed: i, total };
    }
    return { reward: 1, reason: `all ${total} tests passed`, passed: total, total };
  });
}
