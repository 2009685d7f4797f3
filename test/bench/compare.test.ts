import { describe, expect, it } from 'vitest';
import { compareWithTorch, parseBenchRows, parseTorchRows } from '../../bench/compare.ts';
import type { BenchRow } from '../../bench/results.ts';

const row = (name: string, value: number, unit = 'GFLOP/s'): BenchRow => ({ name, value, unit, date: '2026-12-01T00:00:00Z', machine: 'test' });

describe('bench compare', () => {
  it('fills baseline and ratio by name, leaves unmatched rows alone', () => {
    const torch = parseTorchRows(JSON.stringify([{ name: 'a', value: 40, unit: 'GFLOP/s' }, { name: 'z', value: 1, unit: 'GB/s' }]));
    const out = compareWithTorch([row('a', 30), row('b', 5)], torch);
    expect(out[0]!.baseline).toBe(40);
    expect(out[0]!.ratio).toBeCloseTo(0.75, 12);
    expect(out[1]!.baseline).toBeUndefined();
    expect(out[1]!.ratio).toBeUndefined();
  });

  it('reads JSON lines and rejects unit mismatches and bad rows', () => {
    const torch = parseTorchRows('{"name":"a","value":2,"unit":"GB/s"}\n{"name":"b","value":3,"unit":"GB/s"}\n');
    expect(torch).toHaveLength(2);
    expect(() => compareWithTorch([row('a', 1)], torch)).toThrow(/benchmark a: troupe measures GFLOP\/s, PyTorch GB\/s/);
    expect(() => parseTorchRows('[{"name":"a"}]', 'torch.json')).toThrow(/torch.json: row 0 lacks name\/value\/unit/);
    expect(() => parseTorchRows('{oops', 'torch.json')).toThrow(/torch.json: not JSON/);
  });

  it('reads troupe JSON lines back and requires date and machine', () => {
    const lines = [row('a', 1), row('b', 2)].map((r) => JSON.stringify(r)).join('\n');
    expect(parseBenchRows(lines)).toEqual([row('a', 1), row('b', 2)]);
    expect(() => parseBenchRows('{"name":"a","value":1,"unit":"GB/s"}', 'dawn.jsonl')).toThrow(/dawn.jsonl: row a lacks date\/machine/);
  });
});
