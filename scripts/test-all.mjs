// `npm test` after set-up: type check, every test under Node/Dawn with vitest (incl. the Chromium tests in
// test/e2e), then every non-browser test under Deno/wgpu. Every stage runs even when an earlier one
// failed. Ends with the line CI reads, `tests: N passed, N failed, N skipped` (vitest + deno; a failed
// type check or a stage that died without results counts as one failure), and exits 1 on any failure.
//   node scripts/test-all.mjs [--no-typecheck] [--no-node] [--no-deno] [TEST_FILE...]   (files: only those)
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const cache = join(root, '.cache');
const argv = process.argv.slice(2);
const skipStage = new Set(argv.filter((a) => a.startsWith('--no-')).map((a) => a.slice(5)));
const files = argv.filter((a) => !a.startsWith('--'));

function run(title, cmd, args) {
  console.log(`\n==== ${title}: ${[cmd, ...args].join(' ')}`);
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
    child.on('error', (e) => {
      console.error(`${title}: cannot start ${cmd}: ${e.message}`);
      resolve(127);
    });
    child.on('close', (code, signal) => resolve(code ?? (signal ? 128 : 1)));
  });
}

/** Counts from vitest's JSON report; a file that failed without tests (import error) is one failure. */
function vitestCounts(file) {
  const r = JSON.parse(readFileSync(file, 'utf8'));
  const emptyFailed = (r.testResults ?? []).filter((f) => f.status === 'failed' && !(f.assertionResults ?? []).length).length;
  return {
    passed: r.numPassedTests ?? 0,
    failed: (r.numFailedTests ?? 0) + emptyFailed,
    skipped: (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0),
  };
}

const total = { passed: 0, failed: 0, skipped: 0 };
const problems = [];
const add = (c) => {
  total.passed += c.passed;
  total.failed += c.failed;
  total.skipped += c.skipped;
};
mkdirSync(cache, { recursive: true });
const bin = (name) => join(root, 'node_modules/.bin', name);

if (!skipStage.has('typecheck')) {
  const rc = await run('typecheck', bin('tsc'), ['--noEmit', '-p', 'tsconfig.json']);
  if (rc !== 0) {
    problems.push('typecheck failed');
    total.failed += 1;
  }
}

if (!skipStage.has('node')) {
  const report = join(cache, 'vitest-results.json');
  rmSync(report, { force: true });
  const rc = await run('node (vitest, Dawn + Chromium)', bin('vitest'), ['run', '--reporter=default', '--reporter=json', `--outputFile.json=${report}`, ...files]);
  if (existsSync(report)) {
    const c = vitestCounts(report);
    add(c);
    if (rc !== 0 && c.failed === 0) {
      problems.push(`vitest exited ${rc} with no failed test (an error outside tests)`);
      total.failed += 1;
    }
  } else {
    problems.push(`vitest exited ${rc} without a report`);
    total.failed += 1;
  }
}

if (!skipStage.has('deno')) {
  const summary = join(cache, 'deno-summary.json');
  rmSync(summary, { force: true });
  const rc = await run('deno (wgpu)', process.execPath, [join(root, 'scripts/test-deno.mjs'), '--summary', summary, ...files.filter((f) => !f.startsWith('test/e2e/'))]);
  if (existsSync(summary)) {
    const c = JSON.parse(readFileSync(summary, 'utf8'));
    add(c);
    if (rc !== 0 && c.failed === 0) {
      problems.push(`test-deno exited ${rc} with no failed test`);
      total.failed += 1;
    }
  } else {
    problems.push(`test-deno exited ${rc} without a summary`);
    total.failed += 1;
  }
}

console.log('');
for (const p of problems) console.log(`problem: ${p}`);
console.log(`tests: ${total.passed} passed, ${total.failed} failed, ${total.skipped} skipped`);
process.exit(total.failed ? 1 : 0);
