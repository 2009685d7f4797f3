// scripts/bundle.mjs: the single-file CLI for the GPU machine builds (it checks that nothing but Node
// built-ins, webgpu and pyodide stays external) and runs from a folder without node_modules (webgpu
// linked in, as the device prep provides it).
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..');
// The bundle runs on the runtime running this test: node, or deno (process.execPath is deno's binary there).
const isDeno = 'Deno' in globalThis;
const runtime = isDeno ? [process.execPath, 'run', '-A'] : [process.execPath];
const troupe = (...args: string[]) => [...runtime.slice(1), 'dist/troupe.mjs', ...args];

describe('bundle', () => {
  let dir = '';
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'troupe-bundle-'));
    const r = spawnSync('node', [join(ROOT, 'scripts/bundle.mjs'), '--outdir', join(dir, 'dist')], { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });
    if (r.status !== 0) throw new Error(`bundle.mjs failed (${r.status}): ${r.stderr}`);
    mkdirSync(join(dir, 'node_modules'));
    symlinkSync(join(ROOT, 'node_modules/webgpu'), join(dir, 'node_modules/webgpu'));
  });
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('stays under 40 MiB with pyodide beside it (bundle.mjs itself refuses stray external imports)', () => {
    expect(statSync(join(dir, 'dist/troupe.mjs')).size).toBeLessThan(40 * 1024 * 1024);
    expect(statSync(join(dir, 'dist/node_modules/pyodide/pyodide.asm.wasm')).size).toBeGreaterThan(1_000_000);
  });

  it('runs help and doctor from a folder without the project', () => {
    const help = spawnSync(runtime[0]!, troupe('help'), { cwd: dir, encoding: 'utf8', timeout: 60_000 });
    expect(help.status).toBe(0);
    expect(help.stdout).toContain('doctor');
    const doctor = spawnSync(runtime[0]!, troupe('doctor', '--json'), { cwd: dir, encoding: 'utf8', timeout: 120_000 });
    expect(doctor.status).toBe(0);
    const r = JSON.parse(doctor.stdout) as { ok: boolean; runtime: string };
    expect(r.ok).toBe(true);
    expect(r.runtime).toBe(isDeno ? 'deno' : 'node');
  });

  // The symbolic check runs in a worker started from text embedded in the bundle: it must work without
  // node_modules, and a check compute-engine cannot interrupt must end at its limit.
  it('grades math symbolically in its worker, and enforces the time limit there', () => {
    const eq = spawnSync(runtime[0]!, troupe('grade', '--task', 'math', '--response', '\\boxed{\\sqrt{8}}', '--answer', '2\\sqrt2', '--timeout-ms', '5000'), { cwd: dir, encoding: 'utf8', timeout: 120_000 });
    expect(eq.status).toBe(0);
    const g = JSON.parse(eq.stdout.trim().split('\n').at(-1)!) as { reward: number; reason: string };
    expect(g.reward).toBe(1);
    expect(g.reason).toMatch(/symbolic/);
  });
  it('ends a math grade at its time limit whatever the answer', () => {
    const slow = spawnSync(runtime[0]!, troupe('grade', '--task', 'math', '--response', '\\boxed{9^{9^{9}}}', '--answer', '1', '--timeout-ms', '200'), { cwd: dir, encoding: 'utf8', timeout: 120_000 });
    expect(slow.status).toBe(0);
    const g = JSON.parse(slow.stdout.trim().split('\n').at(-1)!) as { reward: number; reason: string };
    expect(g.reward).toBe(0);
    expect(g.reason).toMatch(/timed out after 200 ms/);
  });
});
