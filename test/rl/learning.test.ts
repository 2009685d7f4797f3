// GRPO on the demo model raises held-out validation accuracy by a clear margin in a short run, single
// agent and Voting with isolated policies, through the CLI as a user runs it with the CPU-sized preset
// (`--preset small`, what `npm start` runs; Voting here is `troupe start` cut to 12 of its 16 steps). Validation: 64
// held-out demo tasks x 2 samples at T = 1 (the training temperature), before the first step and after
// the last, 128 episodes each: the standard error of a before/after difference is about 0.06, so the
// asserted margin of 0.10 is out of reach of noise; the runs measured here gained 0.15-0.2.
// What is learned (public/demo-model/README.md): the model works a problem out (`Work: ...`) only about
// 30% of the time and guesses otherwise; working it out is right far more often, on held-out problems too.
// Deno only: lavapipe trains several times faster than SwiftShader (the Node suite trains in
// test/rl/trainer.test.ts); the seeds are fixed, so a run is the same run every time on one driver.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseMetricsJsonl } from '../../src/metrics/jsonl.ts';
import type { ValidationRecord } from '../../src/metrics/schema.ts';
import type { RoleType } from '../../src/workflows/types.ts';
import { captureCli } from '../helpers/cli.ts';

const isDeno = 'Deno' in globalThis;
/** The asserted gain of validation accuracy, after minus before. */
const MARGIN = 0.1;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'troupe-learn-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function train(command: 'train' | 'start', workflow: string, steps: number, extra: string[] = []): Promise<{ before: ValidationRecord; after: ValidationRecord }> {
  const out = join(dir, workflow);
  const r = await captureCli([command, '--workflow', workflow, '--policy', 'isolated', '--steps', String(steps), '--validate-every', String(steps), ...extra, '--out', out]);
  expect(r.code, r.err).toBe(0);
  const vals = parseMetricsJsonl(await readFile(join(out, 'metrics.jsonl'), 'utf8')).records.filter((x): x is ValidationRecord => x.type === 'validation');
  expect(vals.map((v) => v.step)).toEqual([0, steps]);
  for (const v of vals) expect(v.tasks * (v.samples ?? 1)).toBe(128);
  const roles = Object.keys(vals[0]!.roles) as RoleType[];
  console.log(`${workflow}: validation accuracy ${vals[0]!.accuracy.toFixed(3)} -> ${vals[1]!.accuracy.toFixed(3)}`, JSON.stringify(Object.fromEntries(roles.map((k) => [k, [vals[0]!.roles[k]?.accuracy, vals[1]!.roles[k]?.accuracy]]))));
  return { before: vals[0]!, after: vals[1]! };
}

describe.skipIf(!isDeno)('GRPO on the demo model raises validation accuracy', () => {
  it(`single agent: by ${MARGIN} or more in 10 steps of 8 tasks x 8`, { timeout: 900_000 }, async () => {
    const { before, after } = await train('train', 'single', 10, ['--batch-tasks', '8']);
    expect(after.accuracy - before.accuracy).toBeGreaterThanOrEqual(MARGIN);
  });

  it(`voting / isolated (troupe start): by ${MARGIN} or more in 12 steps of 4 tasks x 8, the generators' accuracy too`, { timeout: 900_000 }, async () => {
    const { before, after } = await train('start', 'voting', 12);
    expect(after.accuracy - before.accuracy).toBeGreaterThanOrEqual(MARGIN);
    expect(after.roles.generator!.accuracy! - before.roles.generator!.accuracy!).toBeGreaterThan(0);
  });
});
