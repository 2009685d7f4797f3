// Bundles the CLI for machines without node_modules (the GPU machine): dist/troupe.mjs, one file that runs
// under Node and Deno alike. Everything is inside, data included (the shipped Qwen3 tokenizer JSON),
// except `webgpu` (Dawn for Node; the device prep puts it in node_modules/webgpu) and pyodide (a wasm
// runtime that loads its files from its own folder: copied to dist/node_modules/pyodide, beside the bundle).
//   node scripts/bundle.mjs        then: node dist/troupe.mjs doctor   |   deno run -A dist/troupe.mjs doctor
import { build } from 'esbuild';
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
// --outdir DIR: somewhere else than dist/ (tests).
const outArg = process.argv.indexOf('--outdir');
const dist = outArg > 0 ? resolve(process.argv[outArg + 1]) : join(root, 'dist');
const LIMIT = 40 * 1024 * 1024;

await import(pathToFileURL(join(root, 'scripts/embed-shaders.mjs')).href);
rmSync(dist, { recursive: true, force: true });
mkdirSync(dist, { recursive: true });

// CommonJS dependencies inside an ES module bundle call require() for Node built-ins.
const banner = "import { createRequire as __troupeCreateRequire } from 'node:module'; const require = __troupeCreateRequire(import.meta.url);";
const result = await build({
  metafile: true,
  entryPoints: [join(root, 'src/cli/main.ts')],
  bundle: true,
  format: 'esm',
  minify: true,
  legalComments: 'none',
  logLevel: 'warning',
  banner: { js: banner },
  external: ['webgpu', 'pyodide'],
  outfile: join(dist, 'troupe.mjs'),
  platform: 'node',
  target: 'node20',
  // Node >= 20.10 and Deno read `with { type: 'json' }`; esbuild would strip it for a node20 target.
  supported: { 'import-attributes': true },
});

// The GPU machine has no node_modules: anything else left outside the bundle would fail there.
const externals = new Set(Object.values(result.metafile.outputs).flatMap((o) => o.imports.filter((i) => i.external).map((i) => i.path)));
const unexpected = [...externals].filter((p) => !p.startsWith('node:') && p !== 'webgpu' && p !== 'pyodide');
if (unexpected.length) {
  console.error(`bundle: dist/troupe.mjs would import ${unexpected.join(', ')} at run time: bundle them, or make them node: built-ins`);
  process.exit(1);
}

// pyodide's runtime files (its docs, maps and typings stay behind).
const pyodideDir = join(root, 'node_modules/pyodide');
const pyodideOut = join(dist, 'node_modules/pyodide');
mkdirSync(pyodideOut, { recursive: true });
for (const f of readdirSync(pyodideDir)) {
  if (/\.(map|d\.ts|html|md)$/.test(f)) continue;
  copyFileSync(join(pyodideDir, f), join(pyodideOut, f));
}

// The embedded demo model (`--model demo` resolves to dist/demo-model beside the bundle).
const demoDir = join(root, 'public/demo-model');
const demoOut = join(dist, 'demo-model');
if (existsSync(demoDir)) {
  mkdirSync(demoOut, { recursive: true });
  for (const f of readdirSync(demoDir)) if (statSync(join(demoDir, f)).isFile()) copyFileSync(join(demoDir, f), join(demoOut, f));
}

function du(p) {
  const s = statSync(p);
  return s.isDirectory() ? readdirSync(p).reduce((a, f) => a + du(join(p, f)), 0) : s.size;
}
const mib = (n) => (n / 1048576).toFixed(1);
const parts = ['troupe.mjs', 'node_modules/pyodide', ...(existsSync(demoOut) ? ['demo-model'] : [])];
for (const f of parts) console.log(`${join(dist, f)}: ${mib(du(join(dist, f)))} MiB`);
const nodeSet = parts.reduce((a, f) => a + du(join(dist, f)), 0);
console.log(`${dist}: ${mib(nodeSet)} MiB in all`);
if (nodeSet > LIMIT) {
  console.error(`bundle: ${mib(nodeSet)} MiB is over the ${mib(LIMIT)} MiB budget`);
  process.exit(1);
}
