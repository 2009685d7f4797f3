// What test/rl/learning*.test.ts share: a short GRPO run through the CLI on the demo model, and its validation before
// the first step and after the last (64 held-out tasks x 2 samples: 128 episodes each).
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';
import { parseMetricsJsonl } from '../../src/metrics/jsonl.ts';
import type { ValidationRecord } from '../../src/metrics/schema.ts';
import type { RoleType } from '../../src/workflows/types.ts';
import { captureCli } from './cli.ts';

/** The asserted gain of validation accuracy, after minus before. */
export const MARGIN = 0.1;

/** A fresh folder for the file's runs (made before its tests, removed after). */
export function runsFolder(): () => string {
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'troupe-learn-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });
  return () => dir;
}

export async function train(dir: string, command: 'train' | 'start', workflow: string, steps: number, extra: string[] = []): Promise<{ before: ValidationRecord; after: ValidationRecord }> {
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

