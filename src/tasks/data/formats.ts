// Dataset file formats to plain rows: JSON Lines (one object per line) and Parquet (hyparquet; snappy
// built in). A line that is not a JSON object is a bad row, not a failed load.

import { type FileMetaData, parquetMetadata, parquetReadObjects } from 'hyparquet';
import { DatasetReadError } from './read.ts';

export type Row = Record<string, unknown>;
export type Format = 'jsonl' | 'parquet';

export interface BadRow {
  /** 0-based row (JSONL: line) index in the file. */
  row: number;
  /** A short category ("invalid JSON", "missing prompt"): rows are counted per reason. */
  reason: string;
  /** The specifics of this row, for the report. */
  detail?: string;
}

export interface ParsedRows {
  rows: { index: number; value: Row }[];
  bad: BadRow[];
}

const PARQUET_MAGIC = [0x50, 0x41, 0x52, 0x31]; // "PAR1"

export function detectFormat(name: string, bytes: Uint8Array): Format {
  if (/\.parquet$/i.test(name)) return 'parquet';
  if (/\.(jsonl|ndjson|json)$/i.test(name)) return 'jsonl';
  if (PARQUET_MAGIC.every((b, i) => bytes[i] === b)) return 'parquet';
  return 'jsonl';
}

export function parseJsonl(text: string): ParsedRows {
  const rows: ParsedRows['rows'] = [];
  const bad: BadRow[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line === '') continue;
    try {
      const value: unknown = JSON.parse(line);
      if (value === null || typeof value !== 'object' || Array.isArray(value)) {
        bad.push({ row: i, reason: 'not a JSON object', detail: `line ${i + 1}` });
      } else rows.push({ index: i, value: value as Row });
    } catch (e) {
      bad.push({ row: i, reason: 'invalid JSON', detail: `line ${i + 1}: ${(e as Error).message}` });
    }
  }
  return { rows, bad };
}

/** BigInt (parquet INT64) -> number where exact, so adapters and JSON see plain values. */
function plain(v: unknown): unknown {
  if (typeof v === 'bigint') return Number.isSafeInteger(Number(v)) ? Number(v) : v.toString();
  if (Array.isArray(v)) return v.map(plain);
  if (v !== null && typeof v === 'object' && !(v instanceof Uint8Array) && !(v instanceof Date)) {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
  }
  return v;
}

/** Default rows per chunk: the loader adapts and de-duplicates chunk by chunk, so DAPO-Math-17k's ~1.8M
 * repeated rows never sit in memory as objects all at once. */
const PARQUET_CHUNK_ROWS = 20_000;

/** Parquet rows in chunks (row-index ranges), at most `maxRows` in all. */
export async function* parquetChunks(
  bytes: Uint8Array,
  name: string,
  maxRows?: number,
  chunkRows = PARQUET_CHUNK_ROWS,
): AsyncGenerator<ParsedRows> {
  const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  let metadata: FileMetaData;
  try {
    metadata = parquetMetadata(file);
  } catch (e) {
    throw new DatasetReadError(`dataset ${name}: not a readable parquet file: ${(e as Error).message}`);
  }
  const total = Math.min(Number(metadata.num_rows), maxRows ?? Infinity);
  for (let start = 0; start < total; start += chunkRows) {
    const end = Math.min(total, start + chunkRows);
    let objects: Record<string, unknown>[];
    try {
      objects = await parquetReadObjects({ file, metadata, rowStart: start, rowEnd: end });
    } catch (e) {
      throw new DatasetReadError(`dataset ${name}: not a readable parquet file (rows ${start}-${end}): ${(e as Error).message}`);
    }
    yield { rows: objects.map((value, i) => ({ index: start + i, value: plain(value) as Row })), bad: [] };
  }
}
