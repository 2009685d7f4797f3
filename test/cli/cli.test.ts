// The troupe CLI: dispatch, help, usage errors and exit codes; doctor on the real adapter; the Node
// entry bin/troupe.mjs (bundles src/cli/main.ts, then runs it) as a child process.
import { describe, expect, it } from 'vitest';
import { helpText } from '../../src/cli/cli.ts';
import { UsageError, type Command } from '../../src/cli/command.ts';
import { formatTable } from '../../src/cli/commands/bench.ts';
import type { DoctorResult } from '../../src/cli/commands/doctor.ts';
import { COMMANDS } from '../../src/cli/commands/index.ts';
import { captureCli, spawnTroupe } from '../helpers/cli.ts';

const fake = (run: Command['run']): Command => ({ name: 'fake', summary: 'a test command', usage: 'usage: troupe fake [--n N]', run });

describe('troupe CLI', () => {
  it('help lists every registered command', async () => {
    const names = COMMANDS.map((c) => c.name);
    expect(names).toContain('doctor');
    expect(names).toContain('bench');
    expect(names).toContain('start');
    expect(new Set(names).size).toBe(names.length);
    for (const args of [[], ['help'], ['--help'], ['-h']]) {
      const r = await captureCli(args);
      expect(r.code).toBe(0);
      for (const n of names) expect(r.out).toMatch(new RegExp(`^  ${n}\\s`, 'm'));
    }
    expect(helpText()).toContain('usage: troupe <command>');
  });

  it('an unknown command lists the commands and exits 2', async () => {
    const r = await captureCli(['no-such-command']);
    expect(r.code).toBe(2);
    expect(r.err).toContain('unknown command "no-such-command"');
    expect(r.err).toContain('doctor');
  });

  it('help <command> and <command> --help print its usage', async () => {
    const a = await captureCli(['help', 'doctor']);
    const b = await captureCli(['doctor', '--help']);
    expect(a.code).toBe(0);
    expect(a.out).toContain('usage: troupe doctor');
    expect(b.out).toBe(a.out);
  });

  it('bad options exit 2 with the usage; other errors exit 1 with their message', async () => {
    const bad = await captureCli(['doctor', '--no-such-option']);
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('no-such-option');
    expect(bad.err).toContain('usage: troupe doctor');
    const unwritable = await captureCli(['bench', 'kernels', '--quick', '--out', '/nonexistent-dir/rows.jsonl']);
    expect(unwritable.code).toBe(1);
    expect(unwritable.err).toMatch(/troupe bench: Error: --out \/nonexistent-dir\/rows.jsonl: cannot write: ENOENT/);
    const suite = await captureCli(['bench', 'no-such-suite']);
    expect(suite.code).toBe(2);
    expect(suite.err).toContain('unknown suite "no-such-suite"');
    const usage = await captureCli(['fake'], [fake(async () => Promise.reject(new UsageError('troupe fake: --n is required')))]);
    expect(usage.code).toBe(2);
    expect(usage.err).toContain('--n is required');
    const crash = await captureCli(['fake'], [fake(async () => Promise.reject(new RangeError('weights.bin is truncated')))]);
    expect(crash.code).toBe(1);
    expect(crash.err).toContain('troupe fake: RangeError: weights.bin is truncated');
    const ok = await captureCli(['fake', 'x'], [fake(async (argv) => (argv[0] === 'x' ? 7 : 0))]);
    expect(ok.code).toBe(7);
  });

  it('doctor --json reports the adapter and a passing kernel check', async () => {
    const r = await captureCli(['doctor', '--json']);
    expect(r.code).toBe(0);
    const d = JSON.parse(r.out) as DoctorResult;
    expect(d.ok).toBe(true);
    expect(['node', 'deno']).toContain(d.runtime);
    expect(d.adapter).not.toBeNull();
    expect(d.adapter!.limits.maxStorageBufferBindingSize).toBeGreaterThan(0);
    expect(d.checks.length).toBeGreaterThanOrEqual(1);
    for (const c of d.checks) {
      expect(c.ok).toBe(true);
      expect(c.maxRelError).toBeLessThanOrEqual(c.tolerance);
    }
    const text = await captureCli(['doctor', '--disable', 'shader-f16']);
    expect(text.code).toBe(0);
    expect(text.out).toContain('doctor: OK');
    expect(text.out).not.toMatch(/check .* f16 /);
    // A misspelt feature is a usage error, not silently ignored.
    const typo = await captureCli(['doctor', '--disable', 'shader_f16']);
    expect(typo.code).toBe(2);
    expect(typo.err).toMatch(/--disable shader_f16: not an optional feature troupe uses \(shader-f16, /);
  });

  it('bench --disable runs without the feature and says so in every row', async () => {
    const doctor = JSON.parse((await captureCli(['doctor', '--json'])).out) as DoctorResult;
    const r = await captureCli(['bench', 'kernels', '--quick', '--filter', 'softmax_f32', '--json', '--disable', 'subgroups']);
    expect(r.code).toBe(0);
    const rows = r.out.trim().split('\n').map((l) => JSON.parse(l) as { name: string; value: number; disabled?: string[] });
    expect(rows.length).toBeGreaterThanOrEqual(1);
    // Only features the adapter offers can be left off (SwiftShader has subgroups, lavapipe under Deno has none).
    const offered = doctor.adapter!.adapterFeatures.includes('subgroups');
    for (const row of rows) {
      expect(row.value).toBeGreaterThan(0);
      expect(row.disabled).toEqual(offered ? ['subgroups'] : undefined);
    }
    const typo = await captureCli(['bench', 'kernels', '--quick', '--disable', 'subgroup']);
    expect(typo.code).toBe(2);
    expect(typo.err).toMatch(/troupe bench kernels: --disable subgroup: not an optional feature troupe uses/);
  });

  it('bench prints rows as an aligned table', () => {
    const rows = [
      { name: 'matmul_f32_64x64x64', value: 1.23456, unit: 'GFLOP/s', date: '2026-12-01T00:00:00Z', machine: 'm' },
      { name: 'add_1M', value: 12345.6, unit: 'GB/s', baseline: 20000, ratio: 0.617, ceiling: 4800, ofCeiling: 2.572, date: '2026-12-01T00:00:00Z', machine: 'm' },
    ];
    const lines = formatTable(rows).split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/^name\s+value\s+unit\s+baseline\s+ratio\s+of ceiling$/);
    expect(lines[1]).toContain('1.235');
    expect(lines[2]).toContain('12346');
    expect(lines[2]).toContain('0.617');
    expect(lines[2]).toMatch(/2\.572$/);
  });

  it('bin/troupe.mjs builds and runs the CLI under Node', () => {
    const r = spawnTroupe(['help'], { timeoutMs: 60_000 });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('usage: troupe <command>');
    const unknown = spawnTroupe(['no-such-command'], { timeoutMs: 60_000 });
    expect(unknown.code).toBe(2);
  });

  it('doctor exits 1 when no adapter exists', () => {
    // A Vulkan loader pointed at a driver file that does not exist finds no driver at all.
    const env = { ...process.env, VK_ICD_FILENAMES: '/nonexistent/icd.json', VK_DRIVER_FILES: '/nonexistent/icd.json' };
    const r = spawnTroupe(['doctor', '--json'], { env, timeoutMs: 60_000 });
    expect(r.code).toBe(1);
    const d = JSON.parse(r.stdout) as DoctorResult;
    expect(d.ok).toBe(false);
    expect(d.adapter).toBeNull();
    expect(d.error).toMatch(/no WebGPU adapter/);
  });
});
