// Harness for tests that run code in headless Chromium (WebGPU on SwiftShader), used by test/e2e/*.test.ts.
//
// API
//   const browser = await startBrowser();          // Vite dev server (this repo, vite.config.ts, port 0) + Chromium
//   const result = await browser.run<R>('test/e2e/pages/matmul.ts', args);
//       imports the page module (path from the repo root, served and compiled by Vite) in the page and
//       resolves to what its default export `async (args) => result` returns. args and result cross the
//       page boundary as JSON-like values (plain objects, arrays, numbers, strings; typed arrays become
//       plain objects, so return Array.from(x)). A throw in the page rejects with the page's error message.
//   browser.url                                    // the dev server's origin, e.g. to fetch repo files: `${url}/test/fixtures/...`
//   browser.page                                   // the playwright-core Page, for anything else (setInputFiles, ...)
//   browser.errors                                 // console errors, uncaught page errors and failed loads (HTTP >= 400) so far
//   await browser.close();                         // closes Chromium and the server, removes the profile dir
// Typical use: one browser per test file, in beforeAll / afterAll (start takes a few seconds).
//   let browser: Browser;
//   beforeAll(async () => { browser = await startBrowser(); });
//   afterAll(async () => { await browser?.close(); });
// Page modules import troupe's sources directly (e.g. '../../../src/gpu/gpu.ts'); Gpu.create() finds
// navigator.gpu. The server sends cross-origin isolation headers (SharedArrayBuffer works).
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { createServer, type ViteDevServer } from 'vite';

export const CHROMIUM = '/usr/bin/chromium';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..');

const CHROMIUM_ARGS = [
  '--enable-unsafe-webgpu',
  '--use-webgpu-adapter=swiftshader',
  '--no-sandbox',
  '--disable-gpu-sandbox',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  // Containers often have a small /dev/shm; Chromium then crashes without this.
  '--disable-dev-shm-usage',
];

export class BrowserHarnessError extends Error {
  override name = 'BrowserHarnessError';
}

export interface Browser {
  url: string;
  page: Page;
  errors: string[];
  run<R = unknown>(modulePath: string, args?: unknown): Promise<R>;
  close(): Promise<void>;
}

export async function startBrowser(options: { timeoutMs?: number } = {}): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new BrowserHarnessError(`no Chromium at ${CHROMIUM}: apt-get install chromium (or run bash scripts/setup.sh)`);
  }
  const scratch = mkdtempSync(join(tmpdir(), 'troupe-e2e-'));
  let server: ViteDevServer | null = null;
  let context: BrowserContext | null = null;
  const close = async () => {
    await context?.close().catch(() => {});
    await server?.close().catch(() => {});
    rmSync(scratch, { recursive: true, force: true });
  };
  try {
    server = await createServer({
      configFile: join(ROOT, 'vite.config.ts'),
      root: ROOT,
      // A private dependency cache: concurrent test runs must not rewrite each other's.
      cacheDir: join(scratch, 'vite'),
      logLevel: 'error',
      clearScreen: false,
      server: { host: '127.0.0.1', port: 0, strictPort: false, hmr: false, watch: null },
      // Scan the page modules up front so dependency optimisation never reloads a page mid-test.
      optimizeDeps: { entries: ['test/e2e/pages/**/*.ts'] },
    });
    await server.listen();
    const address = server.httpServer?.address();
    if (!address || typeof address === 'string') throw new BrowserHarnessError('vite dev server has no TCP address');
    const url = `http://127.0.0.1:${address.port}`;
    context = await chromium.launchPersistentContext(join(scratch, 'profile'), {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
      timeout: options.timeoutMs ?? 60_000,
    });
    const page = context.pages()[0] ?? (await context.newPage());
    page.setDefaultTimeout(options.timeoutMs ?? 120_000);
    const errors: string[] = [];
    page.on('console', (m) => {
      // Failed loads are reported below with their URL.
      if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) errors.push(`console: ${m.text()}`);
    });
    page.on('response', (r) => {
      if (r.status() >= 400 && !r.url().endsWith('/favicon.ico')) errors.push(`HTTP ${r.status()} for ${r.url()}`);
    });
    page.on('pageerror', (e) => errors.push(`page error: ${e.message}`));
    await page.goto(`${url}/test/e2e/pages/blank.html`);
    return {
      url,
      page,
      errors,
      async run<R>(modulePath: string, args?: unknown): Promise<R> {
        const spec = '/' + modulePath.replace(/^\/+/, '');
        if (!existsSync(join(ROOT, spec))) throw new BrowserHarnessError(`page module ${modulePath} does not exist`);
        // A string, not a function: vitest rewrites import() inside functions of this (transformed) file.
        const script = `(async () => {
          const mod = await import(${JSON.stringify(spec)});
          if (typeof mod.default !== 'function') throw new Error(${JSON.stringify(`${modulePath} has no default export function`)});
          return await mod.default(${JSON.stringify(args ?? null)});
        })()`;
        return (await page.evaluate(script)) as R;
      },
      close,
    };
  } catch (e) {
    await close();
    throw e;
  }
}
