// The browser app (src/app) in headless Chromium (WebGPU on SwiftShader): it loads without errors, views
// an imported run (charts, before/after table, trajectories, role filter, report export), and trains a
// short demo run in its worker (charts update, a trajectory appears), then exports the adapters as a zip
// whose PEFT folders load with loadPeft. Screenshots in test-results/app/ (git-ignored).
// The demo model comes from public/demo-model/; without it, a random tiny Qwen3 (full Qwen3 vocabulary, so
// the shipped tokenizer fits) is written to test-results/app/tiny-model/ and picked as a local folder.
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unzipStore } from '../../src/app/zip.ts';
import { Gpu } from '../../src/gpu/gpu.ts';
import { ROLE_METRICS } from '../../src/metrics/charts.ts';
import { toJsonl } from '../../src/metrics/jsonl.ts';
import { parseQwen3Config } from '../../src/model/config.ts';
import { loadPeft } from '../../src/model/peft.ts';
import { writeSafetensors } from '../../src/model/safetensors.ts';
import { MemorySource } from '../../src/model/source.ts';
import { expectedTensors } from '../../src/model/weights.ts';
import { mulberry32 } from '../../src/util/mulberry32.ts';
import { syntheticRun } from '../metrics/synthetic.ts';
import { startBrowser, type Browser } from './browser.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..');
const OUT = join(ROOT, 'test-results/app');
const DEMO = join(ROOT, 'public/demo-model');

/** Failed loads that are expected: probes for files a model folder may lack (an index file of a
 * single-file model, tokenizer files of a model that uses the shipped Qwen3 tokenizer). */
const expectedErrors = (e: string) => /HTTP 404 for .*\/(model\.safetensors\.index|tokenizer|tokenizer_config)\.json$/.test(e);

/** The random tiny model's folder, written on first use. */
function ensureTinyModel(): { dir: string; json: Record<string, unknown> } {
  const dir = join(OUT, 'tiny-model');
  if (existsSync(join(dir, 'model.safetensors')) && existsSync(join(dir, 'config.json'))) return { dir, json: JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) };
  return { dir, json: tinyModel(dir) };
}

function tinyModel(dir: string): Record<string, unknown> {
  const fixture = JSON.parse(readFileSync(join(ROOT, 'test/fixtures/models/gqa-tied/config.json'), 'utf8')) as Record<string, unknown>;
  const json = { ...fixture, vocab_size: 151936, bos_token_id: 151643, eos_token_id: 151645, pad_token_id: null, num_hidden_layers: 2, layer_types: ['full_attention', 'full_attention'], hidden_size: 32, intermediate_size: 64, num_attention_heads: 2, num_key_value_heads: 1, head_dim: 16, tie_word_embeddings: true, torch_dtype: 'float32' };
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'config.json'), JSON.stringify(json, null, 2));
  const config = parseQwen3Config(json);
  const r = mulberry32(11);
  const tensors = expectedTensors(config).map((s) => {
    const n = s.shape.reduce((a, b) => a * b, 1);
    const data = new Float32Array(n);
    for (let i = 0; i < n; i++) data[i] = s.kind === 'norm' ? 1 + 0.02 * (r() - 0.5) : 0.04 * (r() - 0.5);
    return { name: s.name, dtype: 'F32' as const, shape: s.shape, data };
  });
  writeFileSync(join(dir, 'model.safetensors'), writeSafetensors(tensors));
  return json;
}

/** A plain static file server (no special headers), as any host of the built site would be. */
async function staticServer(root: string): Promise<{ url: string; server: Server }> {
  const types: Record<string, string> = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.json': 'application/json' };
  const server = createServer((req, res) => {
    const path = join(root, decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname).replace(/\/$/, '/index.html'));
    readFile(path).then(
      (body) => {
        res.writeHead(200, { 'content-type': types[extname(path)] ?? 'application/octet-stream', 'content-length': String(body.length) });
        res.end(body);
      },
      () => {
        res.writeHead(404);
        res.end();
      },
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  // A sub-folder URL: the site must use relative paths.
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, server };
}

describe('browser (Chromium): the troupe app', () => {
  let browser: Browser | undefined;
  beforeAll(async () => {
    mkdirSync(OUT, { recursive: true });
    browser = await startBrowser();
    await browser.page.setViewportSize({ width: 1400, height: 1000 });
  });
  afterAll(async () => {
    await browser?.close();
  });

  async function openApp(): Promise<void> {
    const page = browser!.page;
    await page.goto(`${browser!.url}/src/app/index.html`);
    await page.waitForSelector('body[data-webgpu]');
  }

  it('views an imported run: charts, before/after, trajectories, report export', async () => {
    const page = browser!.page;
    const before = browser!.errors.length;
    await openApp();
    expect(await page.getAttribute('body', 'data-webgpu')).toBe('yes');
    const { records, samples } = syntheticRun(6);
    writeFileSync(join(OUT, 'metrics.jsonl'), toJsonl(records) + 'not json\n');
    writeFileSync(join(OUT, 'samples.jsonl'), toJsonl(samples));
    await page.setInputFiles('#import-file', [join(OUT, 'metrics.jsonl'), join(OUT, 'samples.jsonl')]);
    await page.waitForSelector(`body[data-records="${records.length}"][data-samples="${samples.length}"]`);
    expect(await page.textContent('#status')).toContain('1 unreadable line skipped');
    const r = await page.evaluate(() => ({
      charts: [...document.querySelectorAll<HTMLElement>('#charts .chart')].map((c) => ({ id: c.dataset.chart, canvas: !!c.querySelector('canvas'), series: c.dataset.series })),
      table: document.querySelector('#before-after table')?.textContent ?? '',
      episodes: Number(document.querySelector<HTMLElement>('#trajectories')!.dataset.episodes),
      violations: document.querySelectorAll('#trajectories .turn.violation').length,
      pwned: (window as unknown as { __pwned?: number }).__pwned ?? null,
    }));
    expect(r.charts.map((c) => c.id)).toContain('reward');
    expect(r.charts.length).toBe(ROLE_METRICS.length + 3);
    for (const c of r.charts) expect(c.canvas).toBe(true);
    expect(r.charts.find((c) => c.id === 'entropy')!.series).toBe('generator, aggregator');
    expect(r.table).toContain('0.250');
    expect(r.table).toContain('0.875');
    expect(r.episodes).toBeGreaterThan(0);
    expect(r.violations).toBeGreaterThan(0);
    expect(r.pwned).toBeNull();
    // Role filter: only aggregator turns stay visible.
    await page.selectOption('#traj-role', 'aggregator');
    const visible = await page.evaluate(() => [...document.querySelectorAll<HTMLElement>('#trajectories .turn[data-role]')].filter((t) => !t.classList.contains('hide-role')).map((t) => t.dataset.role));
    expect(visible.length).toBeGreaterThan(0);
    expect(new Set(visible)).toEqual(new Set(['aggregator']));
    await page.selectOption('#traj-role', '');
    await page.screenshot({ path: join(OUT, 'imported.png'), fullPage: true });
    const [dl] = await Promise.all([page.waitForEvent('download'), page.click('#export-report')]);
    const report = readFileSync((await dl.path())!, 'utf8');
    expect(report).toContain('data-chart="format-violation-rate"');
    // Dropping a metrics file on the page views it too.
    const dropped = toJsonl(syntheticRun(3).records);
    await page.evaluate((text) => {
      const dt = new DataTransfer();
      dt.items.add(new File([text], 'dropped-metrics.jsonl'));
      document.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
    }, dropped);
    await page.waitForFunction(() => /viewing dropped-metrics\.jsonl/.test(document.querySelector('#status')!.textContent!));
    expect(await page.getAttribute('#charts .chart[data-chart="reward"]', 'data-points')).toBe('3');
    expect(browser!.errors.slice(before)).toEqual([]);
  });

  it('says clearly when the browser has no WebGPU, and still views imported runs', async () => {
    const page = await browser!.page.context().newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
    try {
      await page.addInitScript(() => Object.defineProperty(Navigator.prototype, 'gpu', { get: () => undefined, configurable: true }));
      await page.goto(`${browser!.url}/src/app/index.html`);
      await page.waitForSelector('body[data-webgpu="no"]');
      expect(await page.textContent('#gpu-status')).toBe('no WebGPU');
      expect(await page.isVisible('#webgpu-message')).toBe(true);
      expect(await page.textContent('#webgpu-message')).toContain('This browser has no WebGPU');
      await page.click('#start');
      expect(await page.textContent('#status')).toContain('cannot train here');
      expect(await page.getAttribute('body', 'data-state')).toBe('idle');
      const { records } = syntheticRun(2);
      writeFileSync(join(OUT, 'metrics-nogpu.jsonl'), toJsonl(records));
      await page.setInputFiles('#import-file', [join(OUT, 'metrics-nogpu.jsonl')]);
      await page.waitForSelector(`body[data-records="${records.length}"]`);
      expect(await page.evaluate(() => document.querySelectorAll('#charts canvas').length)).toBeGreaterThan(0);
      await page.evaluate(() => window.scrollTo(0, 0));
      await page.screenshot({ path: join(OUT, 'no-webgpu.png') });
      expect(errors).toEqual([]);
    } finally {
      await page.close();
    }
  });

  it('trains a short demo run in its worker, live, and exports loadable adapters', async () => {
    const page = browser!.page;
    const before = browser!.errors.length;
    await openApp();
    let modelJson: Record<string, unknown>;
    if (existsSync(join(DEMO, 'config.json'))) {
      modelJson = JSON.parse(readFileSync(join(DEMO, 'config.json'), 'utf8'));
    } else {
      const tiny = ensureTinyModel();
      modelJson = tiny.json;
      await page.setInputFiles('#model-dir', tiny.dir);
      await page.waitForFunction(() => document.querySelector('#model-files-label')!.textContent!.includes('2 files'));
    }
    const set = async (id: string, v: string) => page.fill(`#${id}`, v);
    await page.selectOption('#task', 'demo');
    await page.selectOption('#workflow', 'voting');
    await page.selectOption('#policy', 'isolated');
    await set('steps', '2');
    await set('batch-tasks', '1');
    await set('group-size', '2');
    await set('max-new-tokens', '8');
    await set('validation-every', '2');
    await set('validation-tasks', '2');
    await set('lora-rank', '4');
    await set('lora-alpha', '8');
    await page.click('#start');
    await page.waitForSelector('body[data-state="running"]', { timeout: 300_000 });
    // Pause during the first validation: it takes effect before step 1; resume.
    await page.click('#pause');
    await page.waitForSelector('body[data-state="paused"]', { timeout: 600_000 });
    expect(await page.getAttribute('body', 'data-steps')).toBe('0');
    expect(await page.textContent('#pause')).toBe('Resume');
    await page.click('#pause');
    await page.waitForSelector('body[data-steps="1"]', { timeout: 600_000 });
    await page.waitForSelector('#trajectories .episode');
    const mid = await page.evaluate(() => ({
      points: Number(document.querySelector<HTMLElement>('#charts .chart[data-chart="reward"]')!.dataset.points),
      canvas: !!document.querySelector('#charts .chart[data-chart="reward"] canvas'),
      series: document.querySelector<HTMLElement>('#charts .chart[data-chart="reward"]')!.dataset.series,
      timing: document.querySelector('#step-timing')!.textContent,
      turns: document.querySelectorAll('#trajectories .turn[data-role]').length,
    }));
    expect(mid.points).toBe(1);
    expect(mid.canvas).toBe(true);
    expect(mid.series).toBe('generator, aggregator');
    expect(mid.timing).toContain('step 1 of 2');
    expect(mid.turns).toBeGreaterThan(0);
    await page.screenshot({ path: join(OUT, 'training.png'), fullPage: true });
    await page.waitForSelector('body[data-state="done"]', { timeout: 600_000 });
    expect(await page.getAttribute('#charts .chart[data-chart="reward"]', 'data-points')).toBe('2');
    expect(await page.getAttribute('#charts .chart[data-chart="validation-accuracy"]', 'data-points')).toBe('2');
    await page.screenshot({ path: join(OUT, 'trained.png'), fullPage: true });
    // The run's report, as exported, opened as a file.
    const [rep] = await Promise.all([page.waitForEvent('download'), page.click('#export-report')]);
    const reportPath = join(OUT, 'trained-report.html');
    await rep.saveAs(reportPath);
    const reportPage = await page.context().newPage();
    try {
      await reportPage.setViewportSize({ width: 1300, height: 900 });
      await reportPage.goto(pathToFileURL(reportPath).href);
      await reportPage.waitForSelector('body[data-charts-drawn]');
      expect(await reportPage.getAttribute('body', 'data-charts-drawn')).toBe(String(ROLE_METRICS.length + 3));
      await reportPage.screenshot({ path: join(OUT, 'trained-report.png'), fullPage: true });
    } finally {
      await reportPage.close();
    }

    const [dl] = await Promise.all([page.waitForEvent('download', { timeout: 300_000 }), page.click('#export-adapters')]);
    const zipPath = join(OUT, 'adapters.zip');
    await dl.saveAs(zipPath);
    const files = unzipStore(new Uint8Array(readFileSync(zipPath)));
    const names = [...new Set([...files.keys()].filter((k) => k.includes('/')).map((k) => k.slice(0, k.indexOf('/'))))].sort();
    expect(names).toEqual(['aggregator', 'generator']);
    const gpu = await Gpu.create();
    try {
      const config = parseQwen3Config(modelJson);
      for (const name of names) {
        const src = new MemorySource({
          'adapter_config.json': files.get(`${name}/adapter_config.json`)!,
          'adapter_model.safetensors': files.get(`${name}/adapter_model.safetensors`)!,
        }, `zip ${name}`);
        const loaded = await loadPeft(gpu, src, config, name);
        expect(loaded.lora.rank).toBe(4);
        expect(loaded.lora.alpha).toBe(8);
        loaded.adapter.release();
      }
    } finally {
      gpu.destroy();
    }
    expect(browser!.errors.slice(before).filter((e) => !expectedErrors(e))).toEqual([]);
  }, 1_200_000);

  it('trains on a JSONL task file (single agent)', async () => {
    const page = browser!.page;
    const before = browser!.errors.length;
    await openApp();
    if (!existsSync(join(DEMO, 'config.json'))) await page.setInputFiles('#model-dir', ensureTinyModel().dir);
    const rows = Array.from({ length: 40 }, (_, i) => JSON.stringify({ question: `What is ${i} + ${i % 7}?`, answer: String(i + (i % 7)) }));
    writeFileSync(join(OUT, 'tasks.jsonl'), rows.join('\n') + '\n');
    await page.selectOption('#task', 'file');
    await page.setInputFiles('#task-file', join(OUT, 'tasks.jsonl'));
    await page.selectOption('#task-file-kind', 'math');
    await page.selectOption('#workflow', 'single');
    for (const [id, v] of [['steps', '1'], ['batch-tasks', '1'], ['group-size', '2'], ['max-new-tokens', '12'], ['validation-every', '1'], ['validation-tasks', '1']]) await page.fill(`#${id}`, v!);
    await page.click('#start');
    await page.waitForSelector('body[data-state="done"]', { timeout: 600_000 });
    expect(await page.textContent('#log')).toMatch(/\d+ train, \d+ validation tasks/);
    expect(await page.textContent('#run-header')).toContain('math:tasks.jsonl');
    expect(await page.getAttribute('#charts .chart[data-chart="reward"]', 'data-series')).toBe('generator');
    expect(await page.getAttribute('body', 'data-steps')).toBe('1');
    expect(browser!.errors.slice(before).filter((e) => !expectedErrors(e))).toEqual([]);
  }, 900_000);

  it('builds to a static site that works from a plain file server (relative paths, worker included)', async () => {
    const page = browser!.page;
    const site = join(OUT, 'site', 'troupe');
    await build({ configFile: join(ROOT, 'vite.app.config.ts'), logLevel: 'error', build: { outDir: site, emptyOutDir: true } });
    const { url, server } = await staticServer(OUT);
    ensureTinyModel();
    const { records, samples } = syntheticRun(3);
    writeFileSync(join(OUT, 'metrics.jsonl'), toJsonl(records));
    writeFileSync(join(OUT, 'samples.jsonl'), toJsonl(samples));
    const before = browser!.errors.length;
    try {
      await page.goto(`${url}site/troupe/`);
      await page.waitForSelector('body[data-webgpu="yes"]');
      // The code sandbox's pyodide path from the worker's chunk lands on the copied runtime files.
      const workerChunk = readdirSync(join(site, 'assets/worker/js')).find((f) => /^worker-.*\.js$/.test(f))!;
      expect(readFileSync(join(site, 'assets/worker/js', workerChunk), 'utf8')).toContain('../../../node_modules/pyodide/');
      const pyodide = await page.evaluate(async (chunk) => (await fetch(new URL(`../../../node_modules/pyodide/pyodide.mjs`, new URL(`assets/worker/js/${chunk}`, location.href)))).status, workerChunk);
      expect(pyodide).toBe(200);
      await page.setInputFiles('#import-file', [join(OUT, 'metrics.jsonl'), join(OUT, 'samples.jsonl')]);
      await page.waitForSelector(`body[data-records="${records.length}"]`);
      expect(await page.evaluate(() => document.querySelectorAll('#charts canvas').length)).toBe(ROLE_METRICS.length + 3);
      // The training worker loads from the built chunks, reads a model by URL (the Hugging Face path:
      // UrlSource, OPFS cache, download progress), starts, and stops when asked.
      await page.check('input[name="model-kind"][value="hf"]');
      await page.fill('#hf-repo', `${url}tiny-model/`);
      await page.selectOption('#workflow', 'single');
      await page.fill('#max-new-tokens', '4');
      await page.fill('#validation-tasks', '2');
      await page.click('#start');
      await page.waitForFunction(() => /training on browser WebGPU/.test(document.querySelector('#log')!.textContent!), null, { timeout: 120_000 });
      await page.waitForSelector('body[data-state="running"]', { timeout: 300_000 });
      expect(Number(await page.getAttribute('body', 'data-progress'))).toBeGreaterThan(1);
      await page.click('#stop');
      await page.waitForSelector('body[data-state="done"]', { timeout: 600_000 });
      expect(await page.textContent('#status')).toBe('stopped after step 0');
      expect(await page.getAttribute('body', 'data-steps')).toBe('0');
      expect(browser!.errors.slice(before).filter((e) => !expectedErrors(e))).toEqual([]);
    } finally {
      await page.goto('about:blank');
      server.close();
    }
  });
});
