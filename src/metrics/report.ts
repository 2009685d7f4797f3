// The run report: one self-contained HTML page (uPlot's JS and CSS inlined, no network) from a run's
// metrics records and samples: run header, per-role curves, validation accuracy, a before/after table and
// sample trajectories. Everything from the run is escaped (model outputs are hostile): text goes through
// esc(), chart data goes into a JSON <script> block with '<' written as \u003c, so nothing in a record can
// open or close an element. Works under Node, Deno, the esbuild bundle and in the browser (the app's export).
import { UPLOT_CSS, UPLOT_JS } from '../generated/uplot.ts';
import { allCharts, beforeAfter, drawChart, roleColor, rolesOf, type ChartSpec } from './charts.ts';
import type { MetricsRecord, RunRecord, SampleRecord, StepRecord } from './schema.ts';

export interface ReportInput {
  records: MetricsRecord[];
  samples: SampleRecord[];
  title?: string;
}

/** HTML-escapes text for element content and quoted attribute values. */
export function esc(v: unknown): string {
  return String(v).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** JSON for a <script type="application/json"> block: no '<' (so no '</script>'), no line separators. */
export function scriptJson(v: unknown): string {
  return JSON.stringify(v).replace(/</g, '\\u003c').replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029');
}

/** A number for a table cell: up to 4 significant decimals, '—' for none. */
export function fmtNum(v: number | null | undefined, digits = 3): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return '—';
  if (Number.isInteger(v)) return String(v);
  const a = Math.abs(v);
  if (a !== 0 && (a >= 1e6 || a < 1e-3)) return v.toExponential(2);
  return v.toFixed(digits);
}

function fmtDelta(v: number | null): string {
  if (v === null) return '—';
  return (v > 0 ? '+' : v < 0 ? '−' : '±') + fmtNum(Math.abs(v));
}

function fmtValue(v: unknown): string {
  if (v === null || v === undefined) return '—';
  if (typeof v === 'number') return Number.isFinite(v) ? String(Math.round(v * 1e8) / 1e8) : String(v);
  if (typeof v === 'string') return v;
  return JSON.stringify(v);
}

/** Shared CSS of the report (and the app's trajectory viewer). */
export const REPORT_CSS = `
:root { --fg:#1d1d1f; --muted:#666; --line:#ddd; --bg:#fff; --soft:#f6f7f9; --bad:#b00020; --badbg:#fdecee; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); margin: 0; padding: 20px 28px; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 10px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
.muted { color: var(--muted); }
table.kv, table.grid { border-collapse: collapse; margin: 6px 0; }
table.kv td, table.kv th, table.grid td, table.grid th { border: 1px solid var(--line); padding: 3px 8px; text-align: left; vertical-align: top; }
table.grid td.num, table.grid th.num { text-align: right; font-variant-numeric: tabular-nums; }
table.kv th, table.grid th { background: var(--soft); font-weight: 600; }
.up { color: #087f23; } .down { color: var(--bad); }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(420px, 1fr)); gap: 14px; }
.chart { border: 1px solid var(--line); border-radius: 6px; padding: 6px; background: #fff; min-height: 120px; }
.chart .empty { color: var(--muted); padding: 30px; text-align: center; }
.role { display: inline-block; padding: 0 6px; border-radius: 3px; color: #fff; font-size: 12px; font-weight: 600; }
.episode { border: 1px solid var(--line); border-radius: 6px; margin: 10px 0; background: var(--soft); }
.episode > header { padding: 6px 10px; font-weight: 600; }
.turn { background: #fff; border-top: 1px solid var(--line); padding: 6px 10px; }
.turn.violation { background: var(--badbg); border-left: 4px solid var(--bad); }
.turn .meta { font-size: 12px; color: var(--muted); }
.turn .viol { color: var(--bad); font-weight: 600; }
.turn pre { white-space: pre-wrap; word-break: break-word; margin: 4px 0; font: 12px/1.4 ui-monospace, Menlo, Consolas, monospace; max-height: 320px; overflow: auto; }
.turn pre.blank { color: var(--muted); font-style: italic; }
.run-header { display: flex; gap: 24px; flex-wrap: wrap; align-items: flex-start; }
.run-header details.config > summary { cursor: pointer; font-weight: 600; margin: 6px 0; }
.turn details > summary { cursor: pointer; color: var(--muted); font-size: 12px; }
.filters label { margin-right: 12px; }
.hide-role { display: none; }
`;

export function runHeader(run: RunRecord | undefined, steps: StepRecord[], configOpen = true): string {
  if (!run) return '<p class="muted">No run record in the metrics.</p>';
  const main: [string, unknown][] = [
    ['workflow', run.workflow],
    ['policy', run.policy],
    ['task', run.task],
    ['model', run.model],
    ['started', run.startedAt],
    ['runtime', run.runtime ? `${run.runtime.name} · ${run.runtime.adapter}${run.runtime.cpuDriver ? ' (CPU driver)' : ''}` : undefined],
    ['steps recorded', steps.length],
  ];
  const adapters = Object.entries(run.adapters ?? {})
    .map(([role, a]) => `${esc(role)} → ${a === null ? '<span class="muted">frozen</span>' : esc(a)}`)
    .join('<br>');
  const c = run.config ?? {};
  const num = (k: string) => (typeof c[k] === 'number' ? (c[k] as number) : undefined);
  const lora = c.lora as { rank?: number; alpha?: number } | undefined;
  if (num('steps') !== undefined) main.push(['steps planned', num('steps')]);
  if (num('batchTasks') !== undefined) main.push(['tasks × group', `${num('batchTasks')} × ${num('groupSize') ?? '?'}`]);
  if (num('lr') !== undefined) main.push(['lr', num('lr')]);
  if (lora && typeof lora === 'object') main.push(['LoRA rank / alpha', `${lora.rank ?? '?'} / ${lora.alpha ?? '?'}`]);
  const rows = main.map(([k, v]) => `<tr><th>${esc(k)}</th><td>${esc(fmtValue(v))}</td></tr>`).join('');
  const config = Object.entries(c)
    .map(([k, v]) => `<tr><th>${esc(k)}</th><td>${esc(fmtValue(v))}</td></tr>`)
    .join('');
  return (
    `<div class="run-header">` +
    `<table class="kv">${rows}<tr><th>adapters</th><td>${adapters || '—'}</td></tr></table>` +
    (config ? `<details class="config"${configOpen ? ' open' : ''}><summary>config (${Object.keys(c).length} fields)</summary><table class="kv">${config}</table></details>` : '') +
    `</div>`
  );
}

export function beforeAfterTable(records: MetricsRecord[]): string {
  const ba = beforeAfter(records);
  if (!ba) return '<p class="muted">No validation records.</p>';
  const cls = (d: number | null) => (d === null || d === 0 ? '' : d > 0 ? ' up' : ' down');
  const rows = ba.rows
    .map(
      (r) =>
        `<tr data-row="${esc(r.label)}"><th>${esc(r.label)}</th><td class="num">${fmtNum(r.before)}</td><td class="num">${fmtNum(r.after)}</td><td class="num${cls(r.delta)}">${fmtDelta(r.delta)}</td></tr>`,
    )
    .join('');
  return (
    `<table class="grid" id="before-after"><tr><th>accuracy</th><th class="num">before (step ${esc(ba.first.step)})</th>` +
    `<th class="num">${ba.first === ba.last ? 'after (no second validation yet)' : `after (step ${esc(ba.last.step)})`}</th><th class="num">change</th></tr>${rows}</table>`
  );
}

function chartBoxes(specs: ChartSpec[]): string {
  return specs
    .map((s) => {
      const empty = s.x.length === 0 || s.series.length === 0;
      const legend = s.series.map((se) => esc(se.label)).join(', ');
      return (
        `<div class="chart" data-chart="${esc(s.id)}" data-series="${esc(legend)}">` +
        (empty ? `<div class="empty">${esc(s.title)}: no data</div>` : '') +
        `</div>`
      );
    })
    .join('');
}

/** Role badge HTML (coloured by role type). */
export function roleBadge(role: string, slot?: string): string {
  const name = slot && slot !== role ? `${role} · ${slot}` : role;
  return `<span class="role" style="background:${esc(roleColor(role))}">${esc(name)}</span>`;
}

/** A response as text; one that is empty or only whitespace says so (and shows it escaped) instead of a blank box. */
function responseHtml(text: string): string {
  if (text.trim() !== '') return `<pre>${esc(text)}</pre>`;
  const shown = JSON.stringify(text.length > 200 ? text.slice(0, 200) + '…' : text);
  return `<pre class="blank">${text.length ? `(only whitespace, ${text.length} characters: ${esc(shown)})` : '(empty response)'}</pre>`;
}

/** One episode: every turn by role, its advantage, finish reason; violations highlighted. */
export function episodeHtml(s: SampleRecord): string {
  const turns = s.turns
    .map((t) => {
      const v = t.violation ? ` violation` : '';
      const meta =
        `turn ${esc(t.turn)} · advantage ${fmtNum(t.advantage)} · finish ${esc(t.finishReason)}` +
        (t.violation ? ` · <span class="viol">violation: ${esc(t.violation)}</span>` : '');
      return (
        `<div class="turn${v}" data-role="${esc(t.role)}">${roleBadge(t.role, t.slot)} <span class="meta">${meta}</span>` +
        `<details><summary>prompt</summary><pre>${esc(t.prompt)}</pre></details>` +
        responseHtml(t.response) +
        `</div>`
      );
    })
    .join('');
  return (
    `<div class="episode" data-step="${esc(s.step)}" data-split="${esc(s.split)}">` +
    `<header>${esc(s.split)} · step ${esc(s.step)} · episode ${esc(s.episode)} · task ${esc(s.taskId)} · reward ${fmtNum(s.reward)}</header>` +
    `<div class="turn"><details><summary>task</summary><pre>${esc(s.task)}</pre></details></div>` +
    `${turns}</div>`
  );
}

/** A few episodes for the report: the first and last training steps' and the last validation's. */
export function pickSamples(samples: readonly SampleRecord[], perGroup = 3): SampleRecord[] {
  const groups = (split: 'train' | 'validation') => {
    const ofSplit = samples.filter((s) => s.split === split);
    const stepsSeen = [...new Set(ofSplit.map((s) => s.step))].sort((a, b) => a - b);
    return { ofSplit, stepsSeen };
  };
  const out: SampleRecord[] = [];
  const take = (list: SampleRecord[]) => {
    // Prefer episodes with a violation and a mix of rewards: the ones worth reading.
    const sorted = [...list].sort((a, b) => Number(b.turns.some((t) => t.violation)) - Number(a.turns.some((t) => t.violation)) || a.episode - b.episode);
    const picked: SampleRecord[] = [];
    for (const r of [1, 0]) {
      const hit = sorted.find((s) => s.reward === r && !picked.includes(s));
      if (hit) picked.push(hit);
    }
    for (const s of sorted) if (picked.length < perGroup && !picked.includes(s)) picked.push(s);
    out.push(...picked.slice(0, perGroup).sort((a, b) => a.episode - b.episode));
  };
  const train = groups('train');
  const firstStep = train.stepsSeen[0];
  const lastStep = train.stepsSeen.at(-1);
  if (firstStep !== undefined) take(train.ofSplit.filter((s) => s.step === firstStep));
  if (lastStep !== undefined && lastStep !== firstStep) take(train.ofSplit.filter((s) => s.step === lastStep));
  const val = groups('validation');
  const lastVal = val.stepsSeen.at(-1);
  if (lastVal !== undefined) take(val.ofSplit.filter((s) => s.step === lastVal));
  return out;
}

function samplesSection(samples: readonly SampleRecord[]): string {
  const picked = pickSamples(samples);
  if (!picked.length) return '<p class="muted">No samples.</p>';
  const roles = rolesOf(picked.map((s) => ({ roles: Object.fromEntries(s.turns.map((t) => [t.role, 1])) })));
  const filters =
    `<div class="filters">show roles: ` +
    roles.map((r) => `<label><input type="checkbox" data-filter-role="${esc(r)}" checked> ${roleBadge(r)}</label>`).join('') +
    `</div>`;
  return filters + picked.map(episodeHtml).join('');
}

// The page's script: draws every chart from the JSON block, and the samples' role filter. Plain ES2020;
// drawChart's own source is prepended.
const PAGE_SCRIPT = `
(function () {
  var specs = JSON.parse(document.getElementById('troupe-charts').textContent);
  var plots = [];
  function width(el) { return Math.max(300, el.clientWidth - 12); }
  specs.forEach(function (spec) {
    if (!spec.x.length || !spec.series.length) return;
    var el = document.querySelector('[data-chart="' + spec.id + '"]');
    if (el) plots.push({ el: el, plot: drawChart(uPlot, el, spec, width(el), 220) });
  });
  window.addEventListener('resize', function () {
    plots.forEach(function (p) { p.plot.setSize({ width: width(p.el), height: 220 }); });
  });
  document.querySelectorAll('[data-filter-role]').forEach(function (box) {
    box.addEventListener('change', function () {
      var role = box.getAttribute('data-filter-role');
      document.querySelectorAll('.turn[data-role]').forEach(function (t) {
        if (t.getAttribute('data-role') === role) t.classList.toggle('hide-role', !box.checked);
      });
    });
  });
  document.body.setAttribute('data-charts-drawn', String(plots.length));
})();
`;

/** The report page: one HTML string, no external resources. */
export function renderReport(input: ReportInput): string {
  const { records, samples } = input;
  const run = records.find((r): r is RunRecord => r.type === 'run');
  const steps = records.filter((r): r is StepRecord => r.type === 'step');
  const title = input.title ?? (run ? `troupe · ${run.workflow} · ${run.policy} · ${run.task}` : 'troupe run report');
  const specs = allCharts(records);
  const byId = new Map(specs.map((s) => [s.id, s]));
  const roleSpecs = specs.filter((s) => !['episode', 'validation-accuracy', 'timing'].includes(s.id));
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<title>${esc(title)}</title>
<style>${UPLOT_CSS}</style>
<style>${REPORT_CSS}</style>
</head>
<body>
<h1>${esc(title)}</h1>
<div class="muted">generated ${esc(new Date().toISOString())} · ${steps.length} steps · ${samples.length} samples</div>
<h2>Run</h2>
${runHeader(run, steps)}
<h2>Validation accuracy: before / after</h2>
${beforeAfterTable(records)}
<h2>Team</h2>
<div class="charts">${chartBoxes([byId.get('episode')!, byId.get('validation-accuracy')!, byId.get('timing')!])}</div>
<h2>Per role</h2>
<div class="charts">${chartBoxes(roleSpecs)}</div>
<h2>Sample trajectories</h2>
${samplesSection(samples)}
<script type="application/json" id="troupe-charts">${scriptJson(specs)}</script>
<script>${UPLOT_JS}</script>
<script>var drawChart = (${drawChart.toString()});
${PAGE_SCRIPT}</script>
</body>
</html>
`;
}
