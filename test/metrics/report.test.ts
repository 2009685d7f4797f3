// The run report (src/metrics/report.ts) and the JSONL readers (src/metrics/jsonl.ts) on synthetic records.
import { describe, expect, it } from 'vitest';
import { beforeAfter, roleCharts, ROLE_METRICS } from '../../src/metrics/charts.ts';
import { parseMetricsJsonl, parseRunJsonl, parseSamplesJsonl, toJsonl } from '../../src/metrics/jsonl.ts';
import { esc, renderReport, scriptJson } from '../../src/metrics/report.ts';
import type { ChartSpec } from '../../src/metrics/charts.ts';
import { HOSTILE, syntheticRun } from './synthetic.ts';

function count(haystack: string, needle: string): number {
  return haystack.split(needle).length - 1;
}

function chartJson(html: string): ChartSpec[] {
  const m = /<script type="application\/json" id="troupe-charts">([\s\S]*?)<\/script>/.exec(html);
  if (!m) throw new Error('no chart JSON in the report');
  return JSON.parse(m[1]!) as ChartSpec[];
}

describe('run report', () => {
  const { records, samples } = syntheticRun(6);
  const html = renderReport({ records, samples });

  it('is one self-contained page: uPlot inlined, nothing fetched', () => {
    expect(html.startsWith('<!doctype html>')).toBe(true);
    expect(html).toContain('uPlot');
    expect(html).toContain('.uplot');
    expect(html).not.toMatch(/<script[^>]*\ssrc=/i);
    expect(html).not.toMatch(/<link[^>]*\shref=/i);
    expect(html).not.toMatch(/https?:\/\/(?!github\.com\/leeoniya)/);
  });

  it('has one chart per metric with one series per role', () => {
    for (const m of ROLE_METRICS) expect(count(html, `data-chart="${m.id}"`)).toBe(1);
    for (const id of ['validation-accuracy', 'episode', 'timing']) expect(count(html, `data-chart="${id}"`)).toBe(1);
    const specs = chartJson(html);
    const byId = new Map(specs.map((s) => [s.id, s]));
    for (const m of ROLE_METRICS) {
      const spec = byId.get(m.id)!;
      expect(spec.series.map((s) => s.label)).toEqual(['generator', 'aggregator']);
      expect(spec.x).toEqual([1, 2, 3, 4, 5, 6]);
      for (const s of spec.series) expect(s.values).toHaveLength(6);
    }
    // Frozen-role grad norms are gaps, not zeros.
    expect(byId.get('grad-norm')!.series[1]!.values.every((v) => v === null)).toBe(true);
    const val = byId.get('validation-accuracy')!;
    expect(val.series.map((s) => s.label)).toEqual(['overall', 'generator', 'aggregator']);
    expect(val.x).toEqual([0, 6]);
    expect(val.series[0]!.values).toEqual([0.25, 0.75]);
  });

  it('has the before/after validation table', () => {
    const table = /<table class="grid" id="before-after">([\s\S]*?)<\/table>/.exec(html)?.[1] ?? '';
    expect(table).toContain('before (step 0)');
    expect(table).toContain('after (step 6)');
    expect(table).toMatch(/data-row="overall"><th>overall<\/th><td class="num">0\.250<\/td><td class="num">0\.750<\/td><td class="num up">\+0\.500<\/td>/);
    expect(table).toMatch(/data-row="generator"><th>generator<\/th><td class="num">0\.300<\/td><td class="num">0\.600<\/td><td class="num up">\+0\.300<\/td>/);
    expect(table).toMatch(/data-row="aggregator"><th>aggregator<\/th><td class="num">0\.500<\/td><td class="num">0\.875<\/td><td class="num up">\+0\.375<\/td>/);
    const ba = beforeAfter(records)!;
    expect(ba.rows.map((r) => r.label)).toEqual(['overall', 'generator', 'aggregator']);
    expect(ba.rows[0]!.delta!).toBeCloseTo(0.5, 12);
  });

  it('shows the run header and sample trajectories, violations highlighted', () => {
    expect(html).toContain('<th>workflow</th><td>voting</td>');
    expect(html).toContain('<th>policy</th><td>isolated</td>');
    expect(html).toContain('<th>lr</th><td>0.00001</td>');
    expect(html).toContain('demo-model &lt;b&gt;bold&lt;/b&gt;');
    expect(html).toContain('class="turn violation" data-role="aggregator"');
    expect(html).toContain('violation: generator-no-answer');
    expect(html).toContain('data-split="validation"');
    expect(html).toContain('data-filter-role="generator"');
  });

  it('escapes hostile text: no markup from records survives', () => {
    // Three scripts of its own (chart JSON, uPlot, the page's), no others.
    expect(count(html, '<script')).toBe(3);
    expect(html).not.toContain('window.__pwned = 1</script>');
    expect(html).not.toContain('<img');
    expect(html).toContain(esc(HOSTILE));
    expect(html).toContain('It is 41 &amp; &lt;b&gt;not&lt;/b&gt; boxed');
    // Hostile strings inside the chart JSON (a role name here) cannot close the script element.
    const evil = syntheticRun(2);
    const step = evil.records.find((r) => r.type === 'step')!;
    if (step.type === 'step') (step.roles as Record<string, unknown>)['</script><script>alert(1)</script>'] = step.roles.generator;
    const html2 = renderReport({ records: evil.records, samples: [], title: '<script>alert(2)</script>' });
    expect(count(html2, '<script')).toBe(3);
    expect(html2).toContain('<title>&lt;script&gt;alert(2)&lt;/script&gt;</title>');
    expect(chartJson(html2).find((s) => s.id === 'reward')!.series.map((s) => s.label)).toContain('</script><script>alert(1)</script>');
    expect(scriptJson('</script>')).toBe('"\\u003c/script>"');
  });

  it('has no "after" while there is one validation record', () => {
    const one = records.filter((r) => !(r.type === 'validation' && r.step > 0));
    const ba = beforeAfter(one)!;
    expect(ba.rows[0]!.before).toBe(0.25);
    expect(ba.rows[0]!.after).toBeNull();
    expect(renderReport({ records: one, samples: [] })).toContain('after (no second validation yet)');
  });

  it('renders with no records at all', () => {
    const empty = renderReport({ records: [], samples: [] });
    expect(empty).toContain('No run record');
    expect(empty).toContain('No validation records');
    expect(roleCharts([])[0]!.series).toEqual([]);
  });
});

describe('metrics JSONL', () => {
  const { records, samples } = syntheticRun(3);

  it('round-trips records and samples', () => {
    const m = parseMetricsJsonl(toJsonl(records));
    expect(m.bad).toBe(0);
    expect(m.records).toEqual(records);
    const s = parseSamplesJsonl(toJsonl(samples));
    expect(s.bad).toBe(0);
    expect(s.samples).toEqual(samples);
    const both = parseRunJsonl(toJsonl([...records, ...samples]));
    expect(both.records).toHaveLength(records.length);
    expect(both.samples).toHaveLength(samples.length);
  });

  it('counts bad lines and skips them', () => {
    const text = `${JSON.stringify(records[0])}\n\nnot json\n{"type":"step"}\n{"type":"other","step":1}\n[1,2]\r\n${JSON.stringify(records[1])}\r\n{"type":"step","step":3,"roles":`;
    const m = parseMetricsJsonl(text);
    expect(m.records).toEqual([records[0], records[1]]);
    expect(m.bad).toBe(5);
    const s = parseSamplesJsonl(`${JSON.stringify(samples[0])}\n{"type":"sample","step":1}\n`);
    expect(s.samples).toHaveLength(1);
    expect(s.bad).toBe(1);
    expect(toJsonl([])).toBe('');
  });
});
