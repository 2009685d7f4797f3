// The run report in Chromium: the page renderReport writes, opened from a file:// URL (as a user opens a
// saved report), draws every chart with the inlined uPlot, fetches nothing, logs no errors, and the
// hostile sample text stays text. Screenshot: test-results/report/report.png (git-ignored).
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allCharts } from '../../src/metrics/charts.ts';
import { renderReport } from '../../src/metrics/report.ts';
import { syntheticRun } from '../metrics/synthetic.ts';
import { startBrowser, type Browser } from './browser.ts';

const OUT = join(dirname(fileURLToPath(import.meta.url)), '../../test-results/report');

describe('browser (Chromium): run report', () => {
  let browser: Browser | undefined;
  beforeAll(async () => {
    browser = await startBrowser();
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('renders every chart from a file:// page with no errors and no requests', async () => {
    const { records, samples } = syntheticRun(8);
    const html = renderReport({ records, samples });
    mkdirSync(OUT, { recursive: true });
    const file = join(OUT, 'report.html');
    writeFileSync(file, html);
    const page = browser!.page;
    const requests: string[] = [];
    const onRequest = (r: { url(): string }) => requests.push(r.url());
    page.on('request', onRequest);
    const before = browser!.errors.length;
    await page.setViewportSize({ width: 1300, height: 900 });
    await page.goto(pathToFileURL(file).href);
    await page.waitForSelector('body[data-charts-drawn]');
    page.off('request', onRequest);
    const r = await page.evaluate(() => ({
      drawn: Number(document.body.getAttribute('data-charts-drawn')),
      canvases: document.querySelectorAll('.chart canvas').length,
      charts: [...document.querySelectorAll('.chart')].map((c) => ({ id: c.getAttribute('data-chart'), canvas: !!c.querySelector('canvas'), legend: [...c.querySelectorAll('.u-legend .u-series .u-label')].map((l) => l.textContent) })),
      pwned: (window as unknown as { __pwned?: number }).__pwned ?? null,
      text: document.body.innerText,
      imgs: document.querySelectorAll('img').length,
    }));
    const expected = allCharts(records).filter((s) => s.x.length && s.series.length);
    expect(r.drawn).toBe(expected.length);
    expect(r.canvases).toBe(expected.length);
    for (const c of r.charts) expect(c.canvas).toBe(true);
    expect(r.charts.find((c) => c.id === 'reward')!.legend).toEqual(['step', 'generator', 'aggregator']);
    expect(r.charts.find((c) => c.id === 'validation-accuracy')!.legend).toEqual(['step', 'overall', 'generator', 'aggregator']);
    expect(r.pwned).toBeNull();
    expect(r.imgs).toBe(0);
    expect(r.text).toContain('<script>window.__pwned = 1</script>');
    // The role filter hides a role's turns.
    await page.click('[data-filter-role="aggregator"]');
    const hidden = await page.evaluate(() => document.querySelectorAll('.turn[data-role="aggregator"].hide-role').length);
    expect(hidden).toBeGreaterThan(0);
    await page.click('[data-filter-role="aggregator"]');
    expect(requests).toEqual([pathToFileURL(file).href]);
    expect(browser!.errors.slice(before)).toEqual([]);
    await page.screenshot({ path: join(OUT, 'report.png'), fullPage: true });
  });
});
