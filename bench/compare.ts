// Joins troupe benchmark rows with PyTorch rows of the same name and unit (bench/torch/*.py --out)
// into rows with baseline and ratio = value / baseline (> 1: troupe is faster), for bench/results.json.
// As a script (Deno runs it directly): deno run -A bench/compare.ts TROUPE_ROWS TORCH_ROWS > bench/results.json
// where TROUPE_ROWS is `troupe bench ... --json` output (JSON lines) and TORCH_ROWS a bench_*.py --out file.
import { readFileSync } from 'node:fs';
import type { BenchRow } from './results.ts';

export interface TorchRow {
  name: string;
  value: number;
  unit: string;
}

export class BenchCompareError extends Error {
  override name = 'BenchCompareError';
}

/** Troupe rows with baseline/ratio filled where PyTorch has the same name; a unit mismatch is an error. */
export function compareWithTorch(rows: readonly BenchRow[], torch: readonly TorchRow[]): BenchRow[] {
  const byName = new Map(torch.map((t) => [t.name, t]));
  return rows.map((r) => {
    const t = byName.get(r.name);
    if (!t) return { ...r };
    if (t.unit !== r.unit) throw new BenchCompareError(`benchmark ${r.name}: troupe measures ${r.unit}, PyTorch ${t.unit}`);
    if (!(t.value > 0)) throw new BenchCompareError(`benchmark ${r.name}: PyTorch baseline ${t.value} is not positive`);
    return { ...r, baseline: t.value, ratio: r.value / t.value };
  });
}

/** A JSON array of objects, or JSON lines, each with at least name, value, unit. */
function parseRows(text: string, source: string): Record<string, unknown>[] {
  const trimmed = text.trim();
  let rows: unknown;
  try {
    rows = trimmed.startsWith('[') ? JSON.parse(trimmed) : trimmed.split('\n').filter(Boolean).map((l) => JSON.parse(l));
  } catch (e) {
    throw new BenchCompareError(`${source}: not JSON: ${(e as Error).message}`);
  }
  if (!Array.isArray(rows)) throw new BenchCompareError(`${source}: expected an array of rows`);
  rows.forEach((r, i) => {
    const o = r as Partial<TorchRow>;
    if (typeof o.name !== 'string' || typeof o.value !== 'number' || typeof o.unit !== 'string') {
      throw new BenchCompareError(`${source}: row ${i} lacks name/value/unit`);
    }
  });
  return rows as Record<string, unknown>[];
}

/** PyTorch rows: a JSON array (bench_*.py --out) or JSON lines. */
export function parseTorchRows(text: string, source = 'torch rows'): TorchRow[] {
  return parseRows(text, source).map((o) => ({ name: o.name as string, value: o.value as number, unit: o.unit as string }));
}

/** Troupe rows as `troupe bench ... --json` prints them (JSON lines) or as a JSON array. */
export function parseBenchRows(text: string, source = 'troupe rows'): BenchRow[] {
  return parseRows(text, source).map((o) => {
    if (typeof o.date !== 'string' || typeof o.machine !== 'string') throw new BenchCompareError(`${source}: row ${o.name} lacks date/machine`);
    return o as unknown as BenchRow;
  });
}

if ((import.meta as { main?: boolean }).main) {
  const [troupePath, torchPath] = (globalThis as unknown as { Deno: { args: string[] } }).Deno.args;
  if (!troupePath || !torchPath) throw new BenchCompareError('usage: deno run -A bench/compare.ts TROUPE_ROWS TORCH_ROWS');
  const rows = compareWithTorch(parseBenchRows(readFileSync(troupePath, 'utf8'), troupePath), parseTorchRows(readFileSync(torchPath, 'utf8'), torchPath));
  console.log(JSON.stringify(rows, null, 1));
}
