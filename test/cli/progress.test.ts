import { describe, expect, it } from 'vitest';
import { generateKvBudget, GenerateSizeError } from '../../src/cli/commands/generate.ts';
import { formatDuration, Progress } from '../../src/cli/progress.ts';

/** A stream that records writes, and a clock the test advances. */
function harness(isTTY: boolean) {
  const writes: string[] = [];
  let t = 1_000_000;
  return {
    writes,
    stream: { isTTY, write: (s: string) => writes.push(s) },
    now: () => t,
    advance: (ms: number) => (t += ms),
  };
}

describe('Progress', () => {
  it('off a terminal: one line per 10% (or per 5 s), then a summary line', () => {
    const h = harness(false);
    const p = new Progress({ label: 'generate', total: 200, stream: h.stream, now: h.now });
    for (let i = 0; i < 200; i++) {
      h.advance(10);
      p.tick(1, 'x');
    }
    p.done('200/200 sequences');
    const lines = h.writes.join('').trimEnd().split('\n');
    expect(lines).toHaveLength(11);
    expect(lines[0]).toBe('generate: 20/200 (10%) 0s elapsed, ETA 2s x');
    expect(lines[9]).toMatch(/^generate: 200\/200 \(100%\) 2s elapsed, ETA 0s x$/);
    expect(lines[10]).toBe('generate: 200/200 in 2s (100/s) 200/200 sequences');
    // A slow run prints at least every 5 s even between 10% steps.
    const slow = harness(false);
    const q = new Progress({ label: 'train', total: 1000, stream: slow.stream, now: slow.now });
    slow.advance(6000);
    q.tick();
    expect(slow.writes).toEqual(['train: 1/1000 (0%) 6s elapsed, ETA 1h39m\n']);
  });

  it('on a terminal: a bar redrawn in place with rate and ETA, a newline at the end', () => {
    const h = harness(true);
    const p = new Progress({ label: 'gen', total: 4, stream: h.stream, now: h.now });
    h.advance(1000);
    p.tick(1, 'loss 1.5');
    h.advance(1000);
    p.tick(1);
    p.tick(2);
    p.done();
    expect(h.writes[0]).toBe('\rgen [######------------------]  25% 1/4 1.00/s ETA 3s loss 1.5');
    expect(h.writes.every((w) => w.startsWith('\r') || w === '\n')).toBe(true);
    expect(h.writes.at(-2)).toMatch(/^\rgen: 4\/4 in 2s \(2\.00\/s\)/);
    expect(h.writes.at(-1)).toBe('\n');
    // ticks after done() are ignored
    p.tick();
    expect(h.writes.at(-1)).toBe('\n');
  });

  it('formats durations', () => {
    expect([formatDuration(0.4), formatDuration(59), formatDuration(61), formatDuration(3725), formatDuration(NaN)]).toEqual(['0s', '59s', '1m01s', '1h02m', '?']);
  });
});

describe('generate sizes', () => {
  const qwen06 = { layers: 28, nKv: 8, headDim: 128, bytesPerElem: 2 };
  it('sizes the KV cache for the sequences decoding at once, not all n of them', () => {
    const kv = generateKvBudget({ ...qwen06, n: 10_000, tokens: 40, maxBindBytes: 2 ** 31 });
    expect(kv.pagesPerSeq).toBe(4);
    expect(kv.concurrent).toBe(256);
    expect(kv.bytes).toBe(256 * 4 * 16 * 8 * 128 * 2 * 2 * 28);
  });

  it('refuses up front, with the numbers, a sequence no bindable KV buffer can hold', () => {
    const tooLong = { ...qwen06, n: 1, tokens: 80_000, maxBindBytes: 128 * 2 ** 20 };
    expect(() => generateKvBudget(tooLong)).toThrow(GenerateSizeError);
    expect(() => generateKvBudget(tooLong)).toThrow(
      "one sequence of 80000 tokens needs 5001 KV pages (163872768 bytes per layer's K buffer), but a buffer the GPU can bind (maxStorageBufferBindingSize 134217728) holds 4096 pages",
    );
    // Long sequences that fit: fewer of them at once.
    expect(generateKvBudget({ ...qwen06, n: 64, tokens: 30_000, maxBindBytes: 128 * 2 ** 20 }).concurrent).toBe(2);
  });
});
