// Load a dataset file into Tasks: read bytes, parse rows (JSONL/Parquet), adapt each row, split by
// (seed, id). Bad rows are counted per reason and reported; only an unreadable file fails the load.

import type { Task } from '../types.ts';
import { ADAPTERS, adapterByName, RowError, type RowAdapter } from './adapters.ts';
import { type BadRow, detectFormat, type Format, parquetChunks, parseJsonl, type ParsedRows } from './formats.ts';
import { DatasetReadError, type DataSource, readBytes, sourceName } from './read.ts';
import { splitOf } from './split.ts';

export interface LoadOptions {
  /** Adapter name ('dapo-math', 'dapo-math-processed' / 'math-flat', 'deepcoder') or 'auto' (default). */
  adapter?: string;
  format?: Format;
  /** Split seed (default 0). */
  seed?: number;
  /** Share of tasks held out for validation (default 0.05). */
  valFraction?: number;
  /** Read at most this many rows of the file. */
  maxRows?: number;
  /** Parquet rows decoded per chunk (default 20000). */
  chunkRows?: number;
}

export interface DatasetReport {
  source: string;
  format: Format;
  adapter: string;
  rows: number;
  tasks: number;
  train: number;
  validation: number;
  /** Rows repeating an id already loaded (DAPO-Math-17k repeats each problem): skipped, not bad. */
  duplicates: number;
  bad: number;
  badByReason: Record<string, number>;
  /** The first few bad rows with their specifics. */
  badExamples: BadRow[];
}

export interface Dataset {
  tasks: Task[];
  report: DatasetReport;
}

const MAX_BAD_EXAMPLES = 20;

function pickAdapter(rows: ParsedRows['rows'], name: string, source: string): RowAdapter {
  if (name !== 'auto') return adapterByName(name);
  for (const { value } of rows.slice(0, 50)) {
    const a = ADAPTERS.find((x) => x.matches(value));
    if (a) return a;
  }
  const columns = rows[0] ? Object.keys(rows[0].value).join(', ') : 'no rows';
  throw new DatasetReadError(`dataset ${source}: no adapter fits its columns (${columns}); pass one of ${ADAPTERS.map((a) => a.name).join(', ')}`);
}

async function* rowChunks(bytes: Uint8Array, format: Format, name: string, opts: LoadOptions): AsyncGenerator<ParsedRows> {
  const { maxRows } = opts;
  if (format === 'parquet') {
    yield* parquetChunks(bytes, name, maxRows, opts.chunkRows);
    return;
  }
  const parsed = parseJsonl(new TextDecoder().decode(bytes));
  if (maxRows !== undefined) parsed.rows = parsed.rows.slice(0, maxRows);
  yield parsed;
}

export async function loadDataset(source: DataSource, opts: LoadOptions = {}): Promise<Dataset> {
  const name = sourceName(source);
  const bytes = await readBytes(source);
  const format = opts.format ?? detectFormat(name, bytes);
  const seed = opts.seed ?? 0;
  const valFraction = opts.valFraction ?? 0.05;

  let adapter: RowAdapter | null = null;
  const badExamples: BadRow[] = [];
  const badByReason: Record<string, number> = {};
  let badCount = 0;
  const recordBad = (b: BadRow): void => {
    badCount++;
    badByReason[b.reason] = (badByReason[b.reason] ?? 0) + 1;
    if (badExamples.length < MAX_BAD_EXAMPLES) badExamples.push(b);
  };
  const seen = new Set<string>();
  const tasks: Task[] = [];
  let rows = 0;
  let duplicates = 0;
  for await (const chunk of rowChunks(bytes, format, name, opts)) {
    rows += chunk.rows.length + chunk.bad.length;
    chunk.bad.forEach(recordBad);
    if (chunk.rows.length === 0) continue;
    adapter ??= pickAdapter(chunk.rows, opts.adapter ?? 'auto', name);
    for (const { index, value } of chunk.rows) {
      try {
        const row = adapter.adapt(value);
        if (seen.has(row.id)) {
          duplicates++;
          continue;
        }
        seen.add(row.id);
        tasks.push({ ...row, source: name, split: splitOf(seed, row.id, valFraction) });
      } catch (e) {
        if (!(e instanceof RowError)) throw e;
        recordBad({ row: index, reason: e.reason, detail: e.detail });
      }
    }
  }
  if (adapter === null) throw new DatasetReadError(`dataset ${name}: no rows (${badCount} unreadable)`);
  const validation = tasks.filter((t) => t.split === 'validation').length;
  const report: DatasetReport = {
    source: name,
    format,
    adapter: adapter.name,
    rows,
    tasks: tasks.length,
    train: tasks.length - validation,
    validation,
    duplicates,
    bad: badCount,
    badByReason,
    badExamples,
  };
  return { tasks, report };
}

/** One line for logs: counts, and the bad rows per reason. */
export function formatReport(r: DatasetReport): string {
  const reasons = Object.entries(r.badByReason)
    .map(([reason, n]) => `${n} ${reason}`)
    .join(', ');
  return (
    `dataset ${r.source} (${r.format}, ${r.adapter}): ${r.rows} rows -> ${r.tasks} tasks ` +
    `(${r.train} train, ${r.validation} validation), ${r.duplicates} duplicates, ${r.bad} bad${reasons ? ` (${reasons})` : ''}`
  );
}
