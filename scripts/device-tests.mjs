// Runs test files on the GPU machine, which has Node + Dawn but no node_modules: each file is bundled with
// test/deno/vitest-shim.ts in vitest's place (Deno.test supplied by test/device/deno-on-node.ts), and
// run.mjs runs the bundles one process each, from the repository root (fixtures are read from there).
//   here:    node scripts/device-tests.mjs .device/tests test/kernels/attention.test.ts test/model/*.test.ts
//   device:  source .device/gl/env.sh && node .device/tests/run.mjs [SECONDS]   (carry .device/tests)
// SECONDS: the time limit of each file (default 300); a file stopped at it reports the tests it finished.
// It ends with the line `tests: N passed, N failed, N skipped`; exit code 1 when a test failed.
import { build } from 'esbuild';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const [outArg, ...files] = process.argv.slice(2);
if (!outArg || !files.length) {
  console.error('usage: node scripts/device-tests.mjs OUTDIR TEST_FILE...');
  process.exit(2);
}
const out = resolve(outArg);
const shim = join(root, 'test/deno/vitest-shim.ts');
const denoOnNode = join(root, 'test/device/deno-on-node.ts');

await import(pathToFileURL(join(root, 'scripts/embed-shaders.mjs')).href);
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

const entryName = (f) => relative(root, resolve(f)).replace(/\.test\.ts$/, '').replaceAll('/', '__');
const plugin = {
  name: 'device-tests',
  setup(b) {
    b.onResolve({ filter: /^vitest$/ }, () => ({ path: shim }));
    b.onResolve({ filter: /^device-entry:/ }, (a) => ({ path: a.path.slice('device-entry:'.length), namespace: 'device-entry' }));
    b.onLoad({ filter: /.*/, namespace: 'device-entry' }, (a) => ({
      resolveDir: root,
      loader: 'js',
      contents: [
        `import { runRegistered } from ${JSON.stringify(denoOnNode)};`,
        `import ${JSON.stringify(resolve(a.path))};`,
        `const r = await runRegistered('/tmp/troupe-skips-${entryName(a.path)}.jsonl');`,
        `console.log('@@result ' + JSON.stringify(r));`,
        'process.exit(r.failed ? 1 : 0);',
      ].join('\n'),
    }));
    // The shim declares a global Deno; here it gets the Node stand-in, and nothing else sees a `Deno`.
    b.onLoad({ filter: /vitest-shim\.ts$/ }, (a) => {
      const src = readFileSync(a.path, 'utf8');
      const patched = src.replace(/^declare const Deno:.*$/m, `import { DenoOnNode as Deno } from ${JSON.stringify(denoOnNode)};`);
      if (patched === src) throw new Error(`device-tests: ${a.path} no longer declares \`const Deno\` on one line`);
      return { contents: patched, loader: 'ts' };
    });
    // Tests find fixtures relative to their own file: keep that true for the bundle, run from the root.
    b.onLoad({ filter: /[/\\]test[/\\].*\.test\.ts$/ }, (a) => {
      const rel = relative(root, a.path).split('\\').join('/');
      const url = `new URL(${JSON.stringify(rel)}, ${JSON.stringify('file://')} + process.cwd() + '/').href`;
      return { contents: readFileSync(a.path, 'utf8').replaceAll('import.meta.url', `(${url})`), loader: 'ts' };
    });
  },
};

const banner = "import { createRequire as __troupeCreateRequire } from 'node:module'; const require = __troupeCreateRequire(import.meta.url);";
await build({
  entryPoints: Object.fromEntries(files.map((f) => [`${entryName(f)}.test`, `device-entry:${f}`])),
  bundle: true,
  splitting: true,
  format: 'esm',
  minify: true,
  legalComments: 'none',
  logLevel: 'warning',
  banner: { js: banner },
  external: ['webgpu', 'pyodide'],
  outdir: out,
  platform: 'node',
  target: 'node20',
  supported: { 'import-attributes': true },
  plugins: [plugin],
});

writeFileSync(
  join(out, 'run.mjs'),
  `// Written by scripts/device-tests.mjs: runs each bundled test file in its own process, from the repository root.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
const here = dirname(fileURLToPath(import.meta.url));
const limitMs = 1000 * Number(process.argv[2] ?? 300);
const total = { passed: 0, failed: 0, skipped: 0 };
for (const f of readdirSync(here).filter((f) => f.endsWith('.test.js')).sort()) {
  const t0 = Date.now();
  const p = spawnSync(process.execPath, [join(here, f)], { encoding: 'utf8', timeout: limitMs, maxBuffer: 1 << 26 });
  const line = (p.stdout ?? '').split('\\n').find((l) => l.startsWith('@@result '));
  const done = (p.stderr ?? '').split('\\n').filter((l) => l.startsWith('@@done '));
  const doneFailed = done.filter((l) => l.includes(' FAILED (')).map((l) => '\\n    failed: ' + l.slice(7));
  const stopped = 'no result after ' + done.length + ' tests, ' + (done.length - doneFailed.length) + ' passed (last: ' + (done.at(-1)?.slice(7) ?? 'none') + '): ' + (p.error?.message ?? 'exit ' + p.status + ' ' + (p.signal ?? '')) + doneFailed.join('');
  const r = line ? JSON.parse(line.slice(9)) : { passed: 0, failed: 1, skipped: 0, failures: [{ name: f, error: stopped + '\\n' + (p.stderr ?? '').slice(-3000) }] };
  total.passed += r.passed; total.failed += r.failed; total.skipped += r.skipped;
  console.log(\`\${r.failed ? 'FAILED' : 'ok'} \${f}: \${r.passed} passed, \${r.failed} failed, \${r.skipped} skipped (\${((Date.now() - t0) / 1000).toFixed(1)} s)\`);
  for (const x of r.failures.slice(0, 5)) console.log('  x ' + x.name + '\\n    ' + x.error.split('\\n').slice(0, 12).join('\\n    '));
  if (r.failures.length > 5) console.log(\`  ... and \${r.failures.length - 5} more failures\`);
}
console.log(\`tests: \${total.passed} passed, \${total.failed} failed, \${total.skipped} skipped\`);
process.exit(total.failed ? 1 : 0);
`,
);
console.log(`device-tests: ${files.length} files bundled into ${relative(root, out) || out}; run: node ${relative(root, join(out, 'run.mjs'))}`);
