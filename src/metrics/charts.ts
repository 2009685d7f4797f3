// Chart data from metrics records, and the uPlot code that draws it: shared by the run report (report.ts,
// which inlines drawChart's source into its page) and the browser app (src/app, which calls it directly).
// A ChartSpec is plain JSON: an x axis of steps and one series per role (or per validation split).
import type { MetricsRecord, RoleStepMetrics, StepRecord, ValidationRecord } from './schema.ts';
import { ROLE_TYPES, type RoleType } from '../workflows/types.ts';

export interface ChartSeries {
  label: string;
  color: string;
  values: (number | null)[];
}

export interface ChartSpec {
  /** Stable id (e.g. 'reward', 'validation-accuracy'): the report's `data-chart` attribute. */
  id: string;
  title: string;
  x: number[];
  series: ChartSeries[];
}

/** One colour per role type, the same in every chart of the report and the app. */
export const ROLE_COLORS: Record<RoleType, string> = {
  generator: '#1f77b4',
  evaluator: '#d62728',
  aggregator: '#2ca02c',
  orchestrator: '#9467bd',
  worker: '#ff7f0e',
  synthesizer: '#17becf',
};
export const OVERALL_COLOR = '#333333';

export interface RoleMetricDef {
  id: string;
  title: string;
  get(m: RoleStepMetrics): number | null;
}

/** The per-role curves over steps: one chart each, one series per role. */
export const ROLE_METRICS: readonly RoleMetricDef[] = [
  { id: 'reward', title: 'Reward', get: (m) => m.reward },
  { id: 'accuracy', title: 'Accuracy', get: (m) => m.accuracy },
  { id: 'response-length', title: 'Response length (tokens, mean)', get: (m) => m.responseLength?.mean ?? null },
  { id: 'entropy', title: 'Entropy', get: (m) => m.entropy },
  { id: 'grad-norm', title: 'Grad norm', get: (m) => m.gradNorm },
  { id: 'perplexity', title: 'Perplexity', get: (m) => m.perplexity },
  { id: 'clip-fraction', title: 'Clip fraction', get: (m) => m.clipFrac },
  { id: 'format-violation-rate', title: 'Format-violation rate', get: (m) => m.formatViolationRate },
];

function finite(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

function steps(records: readonly MetricsRecord[]): StepRecord[] {
  return records.filter((r): r is StepRecord => r.type === 'step').sort((a, b) => a.step - b.step);
}

function validations(records: readonly MetricsRecord[]): ValidationRecord[] {
  return records.filter((r): r is ValidationRecord => r.type === 'validation').sort((a, b) => a.step - b.step);
}

/** Role types present in any of the records' `roles`, in ROLE_TYPES order (unknown names last). */
export function rolesOf(records: readonly { roles: Partial<Record<string, unknown>> }[]): string[] {
  const seen = new Set<string>();
  for (const r of records) for (const k of Object.keys(r.roles ?? {})) seen.add(k);
  const known = (ROLE_TYPES as readonly string[]).filter((r) => seen.has(r));
  return [...known, ...[...seen].filter((r) => !(ROLE_TYPES as readonly string[]).includes(r)).sort()];
}

export function roleColor(role: string): string {
  return (ROLE_COLORS as Record<string, string>)[role] ?? '#7f7f7f';
}

/** One chart per ROLE_METRICS entry, a series per role present in the step records. */
export function roleCharts(records: readonly MetricsRecord[]): ChartSpec[] {
  const st = steps(records);
  const roles = rolesOf(st);
  const x = st.map((s) => s.step);
  return ROLE_METRICS.map((def) => ({
    id: def.id,
    title: def.title,
    x,
    series: roles.map((role) => ({
      label: role,
      color: roleColor(role),
      values: st.map((s) => {
        const m = (s.roles as Record<string, RoleStepMetrics | undefined>)[role];
        return m ? finite(def.get(m)) : null;
      }),
    })),
  }));
}

/** Validation accuracy over steps: the episode accuracy ('overall') and each role's own accuracy. */
export function validationChart(records: readonly MetricsRecord[]): ChartSpec {
  const va = validations(records);
  const roles = rolesOf(va);
  return {
    id: 'validation-accuracy',
    title: 'Validation accuracy',
    x: va.map((v) => v.step),
    series: [
      { label: 'overall', color: OVERALL_COLOR, values: va.map((v) => finite(v.accuracy)) },
      ...roles.map((role) => ({
        label: role,
        color: roleColor(role),
        values: va.map((v) => finite((v.roles as Record<string, { accuracy: number | null } | undefined>)[role]?.accuracy)),
      })),
    ],
  };
}

/** Episode reward and accuracy over steps (the whole team). */
export function episodeChart(records: readonly MetricsRecord[]): ChartSpec {
  const st = steps(records);
  return {
    id: 'episode',
    title: 'Episode reward / accuracy',
    x: st.map((s) => s.step),
    series: [
      { label: 'reward', color: OVERALL_COLOR, values: st.map((s) => finite(s.reward)) },
      { label: 'accuracy', color: '#8c564b', values: st.map((s) => finite(s.accuracy)) },
    ],
  };
}

/** Step timing (ms): rollout, reward, update and the whole step. */
export function timingChart(records: readonly MetricsRecord[]): ChartSpec {
  const st = steps(records);
  const part = (k: keyof StepRecord['timings'], label: string, color: string): ChartSeries => ({
    label,
    color,
    values: st.map((s) => finite(s.timings?.[k])),
  });
  return {
    id: 'timing',
    title: 'Step time (ms)',
    x: st.map((s) => s.step),
    series: [
      part('stepMs', 'step', OVERALL_COLOR),
      part('rolloutMs', 'rollout', '#1f77b4'),
      part('rewardMs', 'reward', '#2ca02c'),
      part('updateMs', 'update', '#d62728'),
    ],
  };
}

/** Every chart of a run, in display order. */
export function allCharts(records: readonly MetricsRecord[]): ChartSpec[] {
  return [episodeChart(records), ...roleCharts(records), validationChart(records), timingChart(records)];
}

export interface BeforeAfterRow {
  label: string;
  before: number | null;
  after: number | null;
  delta: number | null;
}

/** Validation accuracy, first vs last validation record: overall then per role (after: null while there is
 * only one); null without any validation record. */
export function beforeAfter(records: readonly MetricsRecord[]): { first: ValidationRecord; last: ValidationRecord; rows: BeforeAfterRow[] } | null {
  const va = validations(records);
  if (va.length < 1) return null;
  const first = va[0]!;
  const last = va[va.length - 1]!;
  // One validation so far (a live run): it is the 'before'; there is no 'after' yet.
  const single = va.length === 1;
  const row = (label: string, b: number | null | undefined, a: number | null | undefined): BeforeAfterRow => {
    const before = finite(b);
    const after = single ? null : finite(a);
    return { label, before, after, delta: before !== null && after !== null ? after - before : null };
  };
  const roleAcc = (v: ValidationRecord, role: string) => (v.roles as Record<string, { accuracy: number | null } | undefined>)[role]?.accuracy;
  return {
    first,
    last,
    rows: [row('overall', first.accuracy, last.accuracy), ...rolesOf([first, last]).map((role) => row(role, roleAcc(first, role), roleAcc(last, role)))],
  };
}

/** The uPlot constructor's shape, as far as drawChart uses it (the app passes the ESM default export, the
 * report page the IIFE's global). */
export interface UPlotLike {
  setData(data: unknown[]): void;
  setSize(size: { width: number; height: number }): void;
  destroy(): void;
}
export type UPlotCtor = new (opts: object, data: unknown[], target: HTMLElement) => UPlotLike;

/**
 * Draws one ChartSpec into `el` with uPlot and returns the plot. Self-contained on purpose (no reference
 * to anything outside its body): report.ts inlines its source text into the report page.
 */
export function drawChart(U: UPlotCtor, el: HTMLElement, spec: ChartSpec, width: number, height: number): UPlotLike {
  const fmt = (v: number | null) => {
    if (v === null || v === undefined) return '—';
    const a = Math.abs(v);
    if (a !== 0 && (a >= 1e5 || a < 1e-3)) return v.toExponential(2);
    return String(Math.round(v * 1e4) / 1e4);
  };
  // A flat series (all rewards 0) gets a small band around its value instead of uPlot's 0..100.
  const range = (_u: unknown, min: number | null, max: number | null): [number, number] => {
    if (min === null || max === null) return [0, 1];
    if (max - min < 1e-9 * Math.max(1, Math.abs(max))) {
      const pad = Math.abs(max) > 0 ? Math.abs(max) * 0.1 : 1;
      return [min - pad, max + pad];
    }
    const pad = (max - min) * 0.08;
    return [min - pad, max + pad];
  };
  const opts = {
    title: spec.title,
    width,
    height,
    scales: { x: { time: false }, y: { range } },
    legend: { live: true },
    cursor: { drag: { x: true, y: false } },
    // Steps are integers: no 1.2, 1.4 ticks.
    axes: [{ label: 'step', incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000] }, { size: 72 }],
    series: [
      { label: 'step' },
      ...spec.series.map((s) => ({
        label: s.label,
        stroke: s.color,
        width: 2,
        spanGaps: true,
        points: { show: spec.x.length <= 40, size: 6, fill: s.color },
        value: (_u: unknown, v: number | null) => fmt(v),
      })),
    ],
  };
  const data = [spec.x, ...spec.series.map((s) => s.values)];
  return new U(opts, data, el);
}
