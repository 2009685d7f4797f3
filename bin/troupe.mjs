#!/usr/bin/env node
// `troupe` under Node: embeds the shaders, bundles src/cli/main.ts (npm packages stay external and load
// from node_modules) into .cache/troupe-cli.mjs, and runs it. Rebuilding every time keeps it in step with
// the sources (esbuild takes ~100 ms); the bundle is written under a temporary name and renamed, so
// concurrent runs never import a half-written file.
import { mkdirSync, renameSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
await import(pathToFileURL(join(root, 'scripts/embed-shaders.mjs')).href);

let build;
try {
  ({ build } = await import('esbuild'));
} catch {
  console.error('troupe: esbuild is missing: run npm ci (or bash scripts/setup.sh) in ' + root);
  process.exit(1);
}
const out = join(root, '.cache/troupe-cli.mjs');
const tmp = `${out}.${process.pid}.tmp`;
mkdirSync(dirname(out), { recursive: true });
try {
  await build({
    entryPoints: [join(root, 'src/cli/main.ts')],
    outfile: tmp,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    // Node >= 20.10 reads `with { type: 'json' }`; esbuild would strip it for a node20 target.
    supported: { 'import-attributes': true },
    packages: 'external',
    sourcemap: 'inline',
    logLevel: 'error',
  });
} catch {
  process.exit(1); // esbuild has printed the errors
}
renameSync(tmp, out);
process.setSourceMapsEnabled(true); // stack traces name the .ts sources
await import(pathToFileURL(out).href);
