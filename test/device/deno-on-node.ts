// The two Deno APIs test/deno/vitest-shim.ts uses (Deno.test, Deno.env.get), under Node, so that the test
// files bundled by scripts/device-tests.mjs run on the GPU machine, which has Node + Dawn but no node_modules
// (and whose Deno/wgpu lacks the subgroups the fast kernels need). It is handed to the shim alone: a global
// `Deno` would make src/gpu/runtime.ts think it runs under Deno.
import { existsSync, readFileSync, rmSync } from 'node:fs';

export interface DenoTestDefinition {
  name: string;
  fn: () => Promise<void>;
  ignore?: boolean;
  only?: boolean;
}

const registered: DenoTestDefinition[] = [];

export const DenoOnNode = {
  test(t: DenoTestDefinition): void {
    registered.push(t);
  },
  env: { get: (name: string): string | undefined => process.env[name] },
};

export interface FileResult {
  passed: number;
  failed: number;
  skipped: number;
  failures: { name: string; error: string }[];
}

/** Runs the tests the bundle's file registered, in order; skips are the ones the shim reported. */
export async function runRegistered(skipReport: string): Promise<FileResult> {
  rmSync(skipReport, { force: true });
  process.env.TROUPE_SKIP_REPORT = skipReport;
  const only = registered.some((t) => t.only);
  const result: FileResult = { passed: 0, failed: 0, skipped: 0, failures: [] };
  for (const t of registered) {
    if (t.ignore || (only && !t.only)) {
      result.skipped++;
      continue;
    }
    const t0 = Date.now();
    let failed = '';
    try {
      await t.fn();
      result.passed++;
    } catch (e) {
      result.failed++;
      result.failures.push({ name: t.name, error: e instanceof Error ? (e.stack ?? e.message) : String(e) });
      failed = ` FAILED (${(e instanceof Error ? e.message : String(e)).split('\n')[0]})`;
    }
    // Progress, so that a file stopped at its time limit still says how far it got and what failed (run.mjs prints
    // these then).
    process.stderr.write(`@@done ${Date.now() - t0} ms: ${t.name}${failed}\n`);
  }
  const skips = existsSync(skipReport) ? readFileSync(skipReport, 'utf8').split('\n').filter(Boolean).length : 0;
  result.passed -= skips;
  result.skipped += skips;
  return result;
}
