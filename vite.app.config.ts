// The browser app (src/app): `npm run dev` serves it, `npm run build` writes a static site to dist-app/
// that any static file server can host (relative asset paths). public/ (the demo model) is copied beside it.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const root = fileURLToPath(new URL('./src/app/', import.meta.url));
const isolation = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' };

export default defineConfig({
  root,
  base: './',
  publicDir: fileURLToPath(new URL('./public/', import.meta.url)),
  // Cross-origin isolation (SharedArrayBuffer for the code sandbox's interrupts), as the test server sends.
  server: { headers: isolation, fs: { allow: [fileURLToPath(new URL('.', import.meta.url))] } },
  preview: { headers: isolation },
  worker: { format: 'es' },
  build: {
    outDir: fileURLToPath(new URL('./dist-app/', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    chunkSizeWarningLimit: 20_000,
  },
});
