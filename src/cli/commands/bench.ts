// `troupe bench <suite>`: runs a benchmark suite (src/cli/bench-suites.ts) and prints its rows as a
// table or as JSON lines; --out appends the JSON lines to a file as well.
import { appendFileSync } from 'node:fs';
import type { BenchRow } from '../../../bench/results.ts';
import { Gpu } from '../../gpu/gpu.ts';
import { useTunedMatmuls } from '../run-setup.ts';
import type { KernelTime } from '../../gpu/profiler.ts';
import type { PhaseTime } from '../../gpu/timeline.ts';
import { disabledFeatures, parse } from '../args.ts';
import { BENCH_SUITES, type BenchSuite } from '../bench-suites.ts';
import { type Command, UsageError } from '../command.ts';

function usage(): string {
  const width = Math.max(8, ...BENCH_SUITES.map((s) => s.name.length));
  const suites = BENCH_SUITES.map((s) => {
    const extra = Object.entries(s.options ?? {}).map(([k, o]) => `\n  ${''.padEnd(width)}    --${k}${o.type === 'string' ? ' VALUE' : ''}  ${o.help}`);
    return `  ${s.name.padEnd(width)}  ${s.summary}${extra.join('')}`;
  });
  return [
    'usage: troupe bench <suite> [--quick] [--filter TEXT] [--json] [--out FILE] [--profile] [--timeline] [--disable FEATURE]...',
    '                          [suite options]',
    '',
    'suites:',
    ...(suites.length ? suites : ['  (none yet)']),
    '',
    '  --quick         tiny shapes (seconds on a CPU driver)',
    '  --filter TEXT   only benchmarks whose name contains TEXT',
    '  --json          one JSON row per line instead of a table',
    '  --out FILE      also append the JSON rows to FILE',
    '  --profile       per-kernel GPU time (timestamp queries) on stderr; each dispatch then gets its own',
    '                  pass, so the suite\'s own figures are not comparable with an unprofiled run',
    '  --timeline      GPU busy and idle time per phase on stderr (two timestamps a submit, none inside it,',
    '                  so the figures stay comparable); suites that name phases also report them as rows;',
    '                  `kernels` adds a <row>_gpu_busy row a case: its rate over GPU busy time, not wall clock',
    '  --disable FEATURE  do not enable an optional feature (subgroups, chromium-experimental-subgroup-matrix,',
    '                  shader-f16): the kernels a runtime without it runs (Deno\'s wgpu has no subgroups), on',
    '                  this one; the rows name what was disabled',
  ].join('\n');
}

function fmt(v: number | undefined): string {
  if (v === undefined) return '';
  return Math.abs(v) >= 1000 ? v.toFixed(0) : v.toPrecision(4);
}

export function formatTable(rows: readonly BenchRow[]): string {
  const cells = rows.map((r) => [r.name, fmt(r.value), r.unit, fmt(r.baseline), r.ratio === undefined ? '' : r.ratio.toFixed(3), r.ofCeiling === undefined ? '' : r.ofCeiling.toFixed(3)]);
  const head = ['name', 'value', 'unit', 'baseline', 'ratio', 'of ceiling'];
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: string[]) => c.map((x, i) => (i === 1 || i >= 3 ? x.padStart(widths[i]!) : x.padEnd(widths[i]!))).join('  ').trimEnd();
  return [line(head), ...cells.map(line)].join('\n');
}

/** Per-kernel GPU time, most expensive first. */
export function formatProfile(times: readonly KernelTime[], untimed: readonly { label: string; count: number }[] = []): string {
  const total = times.reduce((a, t) => a + t.totalMs, 0);
  const width = Math.max(6, ...times.map((t) => t.label.length));
  const rows = times.map((t) => `${t.label.padEnd(width)}  ${String(t.count).padStart(8)}  ${t.totalMs.toFixed(3).padStart(12)}  ${(total ? (100 * t.totalMs) / total : 0).toFixed(1).padStart(5)}%`);
  const lines = [`${'kernel'.padEnd(width)}  ${'calls'.padStart(8)}  ${'GPU ms'.padStart(12)}  share`, ...rows];
  const n = untimed.reduce((a, u) => a + u.count, 0);
  if (n) lines.push(`not timed (over the profiler's passes per batch): ${n} passes: ${untimed.map((u) => `${u.label}×${u.count}`).join(', ')}`);
  return lines.join('\n');
}

/** GPU busy and idle time per phase, and the longest idle gaps of each. */
export function formatTimeline(phases: readonly PhaseTime[]): string {
  const width = Math.max(5, ...phases.map((p) => p.phase.length));
  const lines = [`${'phase'.padEnd(width)}  ${'batches'.padStart(8)}  ${'busy ms'.padStart(10)}  ${'idle ms'.padStart(10)}  longest gaps (ms, before)`];
  for (const p of phases) {
    const gaps = p.longestGaps.map((g) => `${g.ms.toFixed(1)} ${g.before}`).join('; ');
    lines.push(`${p.phase.padEnd(width)}  ${String(p.batches).padStart(8)}  ${p.busyMs.toFixed(1).padStart(10)}  ${p.idleMs.toFixed(1).padStart(10)}  ${gaps}`);
  }
  return lines.join('\n');
}

/** Runs one suite on a fresh Gpu and prints its rows. */
export async function runBench(
  suite: BenchSuite,
  opts: {
    quick: boolean;
    filter?: string;
    json: boolean;
    out?: string;
    profile?: boolean;
    timeline?: boolean;
    disable?: string[];
    extra: Record<string, string | boolean | undefined>;
  },
): Promise<BenchRow[]> {
  const gpu = await Gpu.create({ profile: opts.profile, timeline: opts.timeline, disable: opts.disable });
  try {
    await useTunedMatmuls(gpu);
    const rows = await suite.run(gpu, { quick: opts.quick, filter: opts.filter, extra: opts.extra });
    const lines = rows.map((r) => JSON.stringify(r));
    if (rows.length) console.log(opts.json ? lines.join('\n') : formatTable(rows));
    if (opts.out && lines.length) appendFileSync(opts.out, lines.join('\n') + '\n');
    if (opts.profile) console.error(gpu.profiler ? formatProfile(await gpu.profiler.results(), gpu.profiler.untimed()) : 'troupe bench: --profile needs timestamp-query, which this adapter lacks');
    if (opts.timeline) console.error(gpu.timeline ? formatTimeline(await gpu.timeline.results()) : 'troupe bench: --timeline needs timestamp-query, which this adapter lacks');
    return rows;
  } finally {
    gpu.destroy();
  }
}

export const command: Command = {
  name: 'bench',
  summary: 'run a benchmark suite and print its rows (table or JSON lines)',
  get usage() {
    return usage();
  },
  async run(argv) {
    const [name, ...rest] = argv;
    const suite = BENCH_SUITES.find((s) => s.name === name);
    if (!suite) throw new UsageError(name === undefined ? 'troupe bench: which suite?' : `troupe bench: unknown suite "${name}"`);
    const suiteOptions = Object.fromEntries(Object.entries(suite.options ?? {}).map(([k, o]) => [k, { type: o.type }]));
    const { values } = parse(`bench ${suite.name}`, {
      args: rest,
      options: {
        quick: { type: 'boolean' },
        filter: { type: 'string' },
        json: { type: 'boolean' },
        out: { type: 'string' },
        profile: { type: 'boolean' },
        timeline: { type: 'boolean' },
        disable: { type: 'string', multiple: true },
        ...suiteOptions,
      },
    });
    const { quick, filter, json, out, profile, timeline, disable, ...extra } = values as Record<string, string | boolean | string[] | undefined>;
    const disabled = disabledFeatures(`bench ${suite.name}`, disable as string[] | undefined);
    if (typeof out === 'string') {
      // Before the suite runs (minutes on a GPU), not after.
      try {
        appendFileSync(out, '');
      } catch (e) {
        throw new Error(`--out ${out}: cannot write: ${(e as Error).message}`);
      }
    }
    const rows = await runBench(suite, {
      quick: quick === true,
      filter: typeof filter === 'string' ? filter : undefined,
      json: json === true,
      out: typeof out === 'string' ? out : undefined,
      profile: profile === true,
      timeline: timeline === true,
      disable: disabled,
      extra: extra as Record<string, string | boolean | undefined>,
    });
    if (!rows.length) {
      console.error(`troupe bench ${suite.name}: no benchmark matched${filter ? ` --filter ${filter}` : ''}`);
      return 1;
    }
    return 0;
  },
};
