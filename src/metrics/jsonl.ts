// Reading and writing RUNDIR/metrics.jsonl and RUNDIR/samples.jsonl (schema.ts): one JSON object a line.
// Parsing is lenient: a line that is not JSON, or not a record of the expected shape, is counted in `bad`
// and skipped (a run killed mid-write leaves half a last line), so a report or viewer still shows the rest.
import type { MetricsRecord, RunRecord, SampleRecord, StepRecord, ValidationRecord } from './schema.ts';

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isRecordMap(v: unknown): boolean {
  return isObject(v);
}

/** Whether a parsed value has the shape of a metrics record (the fields the report and app rely on). */
export function isMetricsRecord(v: unknown): v is MetricsRecord {
  if (!isObject(v)) return false;
  switch (v.type) {
    case 'run': {
      const r = v as Partial<RunRecord>;
      return typeof r.workflow === 'string' && typeof r.policy === 'string';
    }
    case 'step': {
      const r = v as Partial<StepRecord>;
      return typeof r.step === 'number' && isRecordMap(r.roles);
    }
    case 'validation': {
      const r = v as Partial<ValidationRecord>;
      return typeof r.step === 'number' && isRecordMap(r.roles);
    }
    default:
      return false;
  }
}

/** Whether a parsed value has the shape of a sample record. */
export function isSampleRecord(v: unknown): v is SampleRecord {
  if (!isObject(v) || v.type !== 'sample') return false;
  const s = v as Partial<SampleRecord>;
  return typeof s.step === 'number' && Array.isArray(s.turns) && s.turns.every((t) => isObject(t) && typeof t.role === 'string');
}

function parseLines<T>(text: string, ok: (v: unknown) => v is T): { items: T[]; bad: number } {
  const items: T[] = [];
  let bad = 0;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line) continue;
    let v: unknown;
    try {
      v = JSON.parse(line);
    } catch {
      bad++;
      continue;
    }
    if (ok(v)) items.push(v);
    else bad++;
  }
  return { items, bad };
}

/** metrics.jsonl text -> its records in file order; `bad` counts the lines skipped. */
export function parseMetricsJsonl(text: string): { records: MetricsRecord[]; bad: number } {
  const { items, bad } = parseLines(text, isMetricsRecord);
  return { records: items, bad };
}

/** samples.jsonl text -> its samples in file order; `bad` counts the lines skipped. */
export function parseSamplesJsonl(text: string): { samples: SampleRecord[]; bad: number } {
  const { items, bad } = parseLines(text, isSampleRecord);
  return { samples: items, bad };
}

/** One file that may hold both kinds (the browser app's export of a run): records and samples apart. */
export function parseRunJsonl(text: string): { records: MetricsRecord[]; samples: SampleRecord[]; bad: number } {
  const records: MetricsRecord[] = [];
  const samples: SampleRecord[] = [];
  const { items, bad } = parseLines(text, (v): v is MetricsRecord | SampleRecord => isMetricsRecord(v) || isSampleRecord(v));
  for (const it of items) {
    if (it.type === 'sample') samples.push(it);
    else records.push(it);
  }
  return { records, samples, bad };
}

/** Records -> JSONL text, one object a line, ending in a newline (empty string for none). */
export function toJsonl(items: readonly unknown[]): string {
  return items.map((r) => JSON.stringify(r) + '\n').join('');
}
