// matmul in headless Chromium (Dawn on SwiftShader) against the CPU reference.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randn, relError } from '../helpers/random.ts';
import { matmulRef } from '../ref/matmul.ts';
import { startBrowser, type Browser } from './browser.ts';
import type { MatmulCase, MatmulPageResult } from './pages/matmul.ts';
import type { TuneStorePageResult } from './pages/tune-store.ts';

const CASES: MatmulCase[] = [
  { M: 1, N: 1, K: 1, transB: false, seed: 1 },
  { M: 17, N: 33, K: 65, transB: false, seed: 3 },
  { M: 5, N: 48, K: 64, transB: true, seed: 5 },
  { M: 130, N: 129, K: 36, transB: true, seed: 7 },
];

describe('browser (Chromium, WebGPU)', () => {
  let browser: Browser | undefined;
  beforeAll(async () => {
    browser = await startBrowser();
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('matmul matches the CPU reference', async () => {
    const r = await browser!.run<MatmulPageResult>('test/e2e/pages/matmul.ts', CASES);
    expect(r.runtime).toBe('browser');
    expect(r.outputs).toHaveLength(CASES.length);
    CASES.forEach((c, i) => {
      const a = randn(c.M * c.K, c.seed);
      const b = randn(c.N * c.K, c.seed + 1);
      const want = matmulRef(a, b, c.M, c.N, c.K, { transB: c.transB });
      expect(r.outputs[i]).toHaveLength(c.M * c.N);
      expect(relError(r.outputs[i]!, want)).toBeLessThan(1e-5);
    });
    expect(browser!.errors).toEqual([]);
  });

  it('tunes matmuls, keeps the table in OPFS and loads it back; a corrupt table is refused by name', async () => {
    const r = await browser!.run<TuneStorePageResult>('test/e2e/pages/tune-store.ts', null);
    expect(r.where).toMatch(/^opfs:troupe-cache\/matmul-tuning-[0-9a-f]{8}\.json$/);
    expect(r.saved).toBe(r.where);
    expect(r.tuned).toBe(2);
    expect(r.loaded).toBe(2);
    expect(r.appliedEntries).toBe(2);
    expect(r.appliedNote).toContain(r.where);
    expect(r.corruptError).toContain(`TuningError: ${r.where}: not valid JSON`);
    expect(browser!.errors).toEqual([]);
  });

  it('a throwing page module rejects with its message', async () => {
    await expect(browser!.run('test/e2e/pages/throws.ts', 'boom-42')).rejects.toThrow(/boom-42/);
  });
});
