import { defineConfig } from 'vitest/config';

export default defineConfig({
  server: {
    // Cross-origin isolation: SharedArrayBuffer (sandbox interrupts) needs it in the browser.
    headers: { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' },
  },
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['test/deno/**', 'node_modules/**'],
    globalSetup: ['test/helpers/global-setup.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 2,
  },
});
