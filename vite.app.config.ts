// The browser app (src/app): `npm run dev` serves it, `npm run build` writes a static site to dist-app/
// that any static file server can host (relative asset paths). public/ (the demo model) is copied beside it.
import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig, type Plugin } from 'vite';

const root = fileURLToPath(new URL('./src/app/', import.meta.url));
const isolation = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' };

const outDir = fileURLToPath(new URL('./dist-app/', import.meta.url));

// The code sandbox (src/tasks/code/sandbox.ts) finds pyodide at ../../../node_modules/pyodide/ from its own
// module: the worker's chunks sit three folders deep (assets/worker/js/) and pyodide's runtime files are
// copied to node_modules/pyodide/ of the site, so that path holds in the built site as in the dev server.
function pyodideFiles(): Plugin {
  let out = outDir;
  return {
    name: 'troupe-pyodide-files',
    apply: 'build',
    configResolved(c) {
      out = c.build.outDir;
    },
    closeBundle() {
      const from = fileURLToPath(new URL('./node_modules/pyodide/', import.meta.url));
      const to = join(out, 'node_modules/pyodide');
      mkdirSync(to, { recursive: true });
      for (const f of readdirSync(from)) if (!/\.(map|d\.ts|html|md)$/.test(f)) copyFileSync(join(from, f), join(to, f));
    },
  };
}

export default defineConfig({
  plugins: [pyodideFiles()],
  root,
  base: './',
  publicDir: fileURLToPath(new URL('./public/', import.meta.url)),
  // Cross-origin isolation (SharedArrayBuffer for the code sandbox's interrupts), as the test server sends.
  server: { headers: isolation, fs: { allow: [fileURLToPath(new URL('.', import.meta.url))] } },
  preview: { headers: isolation },
  worker: {
    format: 'es',
    rolldownOptions: { output: { entryFileNames: 'assets/worker/js/[name]-[hash].js', chunkFileNames: 'assets/worker/js/[name]-[hash].js' } },
  },
  build: {
    outDir,
    emptyOutDir: true,
    target: 'es2022',
    chunkSizeWarningLimit: 20_000,
  },
});
