// `troupe train`, `--resume`, `eval` and `start` through the CLI on the demo model (tiny sizes):
// the run directory's files; a run stopped after step 1, left with a half-written checkpoint and a
// half-written metrics line (a process killed mid-write), resumes to the same adapters, bit for bit,
// as an uninterrupted run; a dataset's bad rows are counted and reported, not fatal; bad arguments are
// usage errors that name the problem.
// Runs under Deno (lavapipe trains several times faster than SwiftShader); Node trains in
// test/rl/trainer.test.ts and the app's Chromium test, so the slow end-to-end runs are not repeated.
import { mkdtemp, mkdir, readdir, readFile, rm, writeFile, appendFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseMetricsJsonl } from '../../src/metrics/jsonl.ts';
import { captureCli } from '../helpers/cli.ts';

const isDeno = 'Deno' in globalThis;
let dir: string;
const TINY = ['--model', 'public/demo-model', '--task', 'demo', '--steps', '2', '--batch-tasks', '2', '--group-size', '2', '--max-new-tokens', '10', '--val-tasks', '3', '--validate-every', '1', '--lora-rank', '2', '--seed', '4'];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'troupe-train-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

describe.skipIf(!isDeno)('troupe train', () => {
  it('writes metrics, samples, checkpoints, PEFT adapters and a report; eval reads the run', { timeout: 600_000 }, async () => {
    const out = join(dir, 'full');
    const r = await captureCli(['train', ...TINY, '--workflow', 'voting', '--policy', 'isolated', '--out', out]);
    expect(r.code).toBe(0);
    const last = JSON.parse(r.out.trim().split('\n').at(-1)!);
    expect(last.runDir).toBe(out);
    expect(last.steps).toBe(2);
    expect(typeof last.before).toBe('number');
    const { records, bad } = parseMetricsJsonl(await readFile(join(out, 'metrics.jsonl'), 'utf8'));
    expect(bad).toBe(0);
    expect(records.map((x) => x.type)).toEqual(['run', 'validation', 'step', 'validation', 'step', 'validation']);
    expect((await readdir(join(out, 'adapters'))).sort()).toEqual(['aggregator', 'generator']);
    expect((await readdir(join(out, 'adapters', 'generator'))).sort()).toEqual(['adapter_config.json', 'adapter_model.safetensors']);
    expect(await readFile(join(out, 'report.html'), 'utf8')).toContain('<html');
    expect(r.err).toMatch(/validation accuracy/);
    const e = await captureCli(['eval', '--run', out]);
    expect(e.code).toBe(0);
    const ev = JSON.parse(e.out.trim().split('\n').at(-1)!);
    expect(ev.tasks).toBe(3);
    expect(ev.adapters.sort()).toEqual(['aggregator', 'generator']);
    // the final validation of the run and eval of its adapters are the same greedy pass
    expect(ev.accuracy).toBe(last.after);
  });

  it('a run killed mid-checkpoint resumes to the same adapters as an uninterrupted run', { timeout: 600_000 }, async () => {
    const straight = join(dir, 'straight');
    expect((await captureCli(['train', ...TINY, '--workflow', 'single', '--policy', 'shared', '--checkpoint-every', '1', '--out', straight])).code).toBe(0);
    const cut = join(dir, 'cut');
    const first = await captureCli(['train', ...TINY, '--workflow', 'single', '--policy', 'shared', '--checkpoint-every', '1', '--stop-after', '1', '--out', cut]);
    expect(first.code).toBe(0);
    expect(first.err).toMatch(/--resume/);
    // What a kill during the next checkpoint and mid-line in metrics.jsonl leaves behind:
    await mkdir(join(cut, 'checkpoints', '.tmp-step-000002-1'), { recursive: true });
    await writeFile(join(cut, 'checkpoints', '.tmp-step-000002-1', 'state.json'), '{"format": "troupe-chec');
    await appendFile(join(cut, 'metrics.jsonl'), '{"type":"step","step":2,"rew');
    const again = await captureCli(['train', '--resume', cut]);
    expect(again.code).toBe(0);
    const a = await readFile(join(straight, 'adapters', 'policy', 'adapter_model.safetensors'));
    const b = await readFile(join(cut, 'adapters', 'policy', 'adapter_model.safetensors'));
    expect(sameBytes(new Uint8Array(a), new Uint8Array(b))).toBe(true);
    const strip = (text: string) => parseMetricsJsonl(text).records.filter((x) => x.type !== 'run').map((x) => ({ ...x, time: 0, timings: 0, memory: 0 }));
    const ms = parseMetricsJsonl(await readFile(join(cut, 'metrics.jsonl'), 'utf8'));
    expect(ms.bad).toBe(0);
    expect(strip(await readFile(join(cut, 'metrics.jsonl'), 'utf8'))).toEqual(strip(await readFile(join(straight, 'metrics.jsonl'), 'utf8')));
  });

  it('trains on a dataset with bad rows: they are counted and reported, the run goes on', { timeout: 300_000 }, async () => {
    const file = join(dir, 'rows.jsonl');
    const good = Array.from({ length: 60 }, (_, i) => JSON.stringify({ id: i, problem: `What is ${i} + ${i % 7}?`, answer: String(i + (i % 7)) }));
    const bad = ['{not json', JSON.stringify({ id: 'no-answer', problem: 'What is 1 + 1?' }), JSON.stringify([1, 2]), JSON.stringify({ id: 'empty', problem: '', answer: '2' })];
    await writeFile(file, [...good.slice(0, 30), ...bad, ...good.slice(30)].join('\n') + '\n');
    const out = join(dir, 'dataset');
    const r = await captureCli(['train', ...TINY.filter((_, i) => i < 2 || i > 3), '--task', 'math', '--data', file, '--workflow', 'single', '--steps', '1', '--validate-every', '1', '--out', out]);
    expect(r.err).toMatch(/64 rows -> 60 tasks .* 4 bad/);
    expect(r.code).toBe(0);
    const run = parseMetricsJsonl(await readFile(join(out, 'metrics.jsonl'), 'utf8')).records[0]!;
    expect(run.type).toBe('run');
    if (run.type !== 'run') return;
    expect([run.tasks?.rows, run.tasks?.bad]).toEqual([64, 4]);
    expect(run.tasks!.train + run.tasks!.validation).toBe(60);
    expect(Object.values(run.tasks!.badByReason!).reduce((a, b) => a + b, 0)).toBe(4);
  });

  it('refuses bad arguments and an existing run with messages that name them', { timeout: 120_000 }, async () => {
    const r1 = await captureCli(['train', ...TINY, '--workflow', 'debate', '--out', join(dir, 'x')]);
    expect(r1.code).toBe(2);
    expect(r1.err).toMatch(/unknown --workflow debate/);
    const r2 = await captureCli(['train', ...TINY, '--policy', 'mixed', '--out', join(dir, 'x')]);
    expect(r2.err).toMatch(/--policy must be shared or isolated/);
    const r3 = await captureCli(['train', ...TINY, '--frozen', 'critic', '--out', join(dir, 'x')]);
    expect(r3.err).toMatch(/unknown role critic/);
    const r4 = await captureCli(['train', ...TINY, '--out', join(dir, 'full')]);
    expect(r4.code).not.toBe(0);
    expect(r4.err).toMatch(/already holds a run.*--resume/);
    const r5 = await captureCli(['train', '--resume', join(dir, 'nothing-here')]);
    expect(r5.code).toBe(2);
    expect(r5.err).toMatch(/no readable config.json/);
    const r6 = await captureCli(['train', '--resume', join(dir, 'full'), '--lr', '1']);
    expect(r6.err).toMatch(/--resume takes the run's saved config; drop --lr/);
  });
});
