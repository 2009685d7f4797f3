// Running the CLI in tests: in-process with console output captured, the whole dispatcher (runCli: usage
// errors and crashes become exit codes) or one command's run() (its errors propagate); or as a user
// runs it, `node bin/troupe.mjs` in a child process.
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCli } from '../../src/cli/cli.ts';
import type { Command } from '../../src/cli/command.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..');

/** console.log / console.error captured, one '\n'-ended line per call, while fn runs. */
async function captured<T>(fn: () => Promise<T>): Promise<{ value: T; out: string; err: string }> {
  const { log, error } = console;
  let out = '';
  let err = '';
  console.log = (...a: unknown[]) => void (out += a.map(String).join(' ') + '\n');
  console.error = (...a: unknown[]) => void (err += a.map(String).join(' ') + '\n');
  try {
    const value = await fn();
    return { value, out, err };
  } finally {
    console.log = log;
    console.error = error;
  }
}

/** `troupe ...argv` through runCli: exit code, stdout, stderr. */
export async function captureCli(argv: string[], commands?: Command[]): Promise<{ code: number; out: string; err: string }> {
  const r = await captured(() => runCli(argv, commands));
  return { code: r.value, out: r.out, err: r.err };
}

/** `node bin/troupe.mjs ...args` from the repository root (node also under Deno: it is the Node entry). */
export function spawnTroupe(args: string[], opts: { env?: Record<string, string | undefined>; timeoutMs?: number } = {}): { code: number; stdout: string; stderr: string } {
  const r = spawnSync('node', [join(ROOT, 'bin/troupe.mjs'), ...args], { cwd: ROOT, env: opts.env ?? process.env, encoding: 'utf8', timeout: opts.timeoutMs ?? 300_000 });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/** One command's run(argv): exit code and the last line printed to stdout (errors propagate). */
export async function runCommand(command: Command, argv: string[]): Promise<{ code: number; last: string }> {
  const r = await captured(() => command.run(argv));
  return { code: r.value, last: r.out.trimEnd().split('\n').at(-1) ?? '' };
}
