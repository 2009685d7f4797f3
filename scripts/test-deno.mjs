// Runs the test files under Deno (wgpu; lavapipe on a CPU-only machine), one `deno test` process per file
// so a crash or a module that fails to load costs only that file. "vitest" is mapped to
// test/deno/vitest-shim.ts. Browser tests (test/e2e) are Chromium-only and are left out.
//   node scripts/test-deno.mjs [FILE...] [--summary OUT.json]     (TROUPE_DENO_FILE_TIMEOUT_S: per file, default 1800)
// Prints one line per file and `deno: N passed, N failed, N skipped`; exits 1 when anything failed.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const DENO = join(root, 'node_modules/deno/deno');
const EXCLUDED = ['test/e2e/', 'test/deno/'];
const FILE_TIMEOUT_S = Number(process.env.TROUPE_DENO_FILE_TIMEOUT_S ?? 1800);

function findTests(dir) {
  const out = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...findTests(p));
    else if (name.endsWith('.test.ts')) out.push(relative(root, p));
  }
  return out;
}

/** Counts from Deno's closing line, e.g. "ok | 12 passed (3 steps) | 0 failed | 1 ignored (31ms)". */
export function parseDenoSummary(text) {
  const lines = text.split('\n').filter((l) => /^(ok|FAILED) \| /.test(l));
  const last = lines.at(-1);
  if (!last) return null;
  const count = (word) => Number(new RegExp(`(\\d+) ${word}`).exec(last)?.[1] ?? 0);
  return { passed: count('passed'), failed: count('failed'), ignored: count('ignored') };
}

function runFile(file, cache) {
  const skipReport = join(cache, `skips-${file.replace(/[^\w.-]+/g, '_')}.jsonl`);
  rmSync(skipReport, { force: true });
  const args = ['test', '-A', '--no-check', `--import-map=${join(cache, 'deno-import-map.json')}`, file];
  const env = { ...process.env, NO_COLOR: '1', TROUPE_SKIP_REPORT: skipReport, XDG_RUNTIME_DIR: process.env.XDG_RUNTIME_DIR || '/tmp' };
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(DENO, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    // A hung file (a GPU wait that never returns) must not hang the run.
    const timer = setTimeout(() => child.kill('SIGKILL'), FILE_TIMEOUT_S * 1000);
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const seconds = ((Date.now() - started) / 1000).toFixed(1);
      const summary = parseDenoSummary(output);
      const skipped = existsSync(skipReport) ? readFileSync(skipReport, 'utf8').split('\n').filter(Boolean).length : 0;
      let r;
      if (!summary) {
        // The module failed to load, or deno crashed before its summary: the file counts as one failure.
        r = { passed: 0, failed: 1, skipped: 0 };
      } else {
        r = { passed: summary.passed - skipped, failed: summary.failed, skipped: summary.ignored + skipped };
        if (code !== 0 && r.failed === 0) r.failed = 1; // e.g. `only` used, or a leak Deno refused
      }
      const status = r.failed ? 'FAILED' : 'ok';
      console.log(`deno ${status} ${file}: ${r.passed} passed, ${r.failed} failed, ${r.skipped} skipped (${seconds} s)`);
      if (r.failed) {
        const why = signal ? `killed by ${signal}${signal === 'SIGKILL' ? ` (over ${FILE_TIMEOUT_S} s?)` : ''}` : `exit code ${code}`;
        console.log(`---- deno output for ${file} (${why}) ----\n${output.trimEnd()}\n---- end of ${file} ----`);
      }
      resolve(r);
    });
  });
}

async function main() {
  const argv = process.argv.slice(2);
  let summaryPath = null;
  const files = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--summary') summaryPath = argv[++i];
    else files.push(argv[i]);
  }
  if (!existsSync(DENO)) {
    console.error(`test-deno: no Deno binary at ${DENO}: run npm ci`);
    process.exit(1);
  }
  await import(pathToFileURL(join(root, 'scripts/embed-shaders.mjs')).href);
  const cache = join(root, '.cache');
  mkdirSync(cache, { recursive: true });
  const importMap = { imports: { vitest: relative(cache, join(root, 'test/deno/vitest-shim.ts')).split('\\').join('/') } };
  writeFileSync(join(cache, 'deno-import-map.json'), JSON.stringify(importMap, null, 2));
  const list = files.length ? files : findTests(join(root, 'test')).filter((f) => !EXCLUDED.some((x) => f.startsWith(x)));
  const total = { passed: 0, failed: 0, skipped: 0 };
  for (const f of list) {
    const r = await runFile(f, cache);
    total.passed += r.passed;
    total.failed += r.failed;
    total.skipped += r.skipped;
  }
  if (summaryPath) writeFileSync(summaryPath, JSON.stringify(total));
  console.log(`deno: ${total.passed} passed, ${total.failed} failed, ${total.skipped} skipped`);
  process.exit(total.failed ? 1 : 0);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await main();
