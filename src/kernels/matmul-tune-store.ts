// Where tuned matmul tables live: one JSON file per adapter and matmul shader source under the cache directory
// (TROUPE_CACHE_DIR, else $XDG_CACHE_HOME/troupe, else ~/.cache/troupe) under Node and Deno, and in a browser (page
// or worker) in the origin's private file system (OPFS), folder troupe-cache, beside the cached model files. The key hashes the runtime, the adapter's names and features and the shaders the candidates run,
// so another GPU, driver string or kernel version never reads a table measured for something else.
import type { Gpu } from '../gpu/gpu.ts';
import { SHADERS } from '../generated/shaders.ts';
import { atomicWriteFile } from '../util/atomic-write.ts';
import { checkTuning } from './matmul-tune.ts';
import { type MatmulChoice, MatmulTuning, setMatmulTuning, type TunedEntry, TuningError } from './matmul-tuning.ts';

const FORMAT = 'troupe-matmul-tuning';
const VERSION = 1;

/** FNV-1a, 32 bits, as 8 hex digits. */
function fnv1a(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0).toString(16).padStart(8, '0');
}

/** What a table was measured on. */
function adapterIdentity(gpu: Gpu): Record<string, unknown> {
  const r = gpu.report;
  const shaders = Object.keys(SHADERS).filter((k) => k.startsWith('matmul') || k === 'absmax_scale').sort();
  return {
    runtime: r.runtime,
    vendor: r.vendor,
    architecture: r.architecture,
    device: r.device,
    description: r.description,
    features: [...r.features].sort(),
    shaders: fnv1a(shaders.map((k) => `${k}\n${SHADERS[k]}`).join('\n')),
  };
}

export function tuningKey(gpu: Gpu): string {
  return fnv1a(JSON.stringify(adapterIdentity(gpu)));
}

export function serializeTuning(gpu: Gpu, t: MatmulTuning): string {
  return `${JSON.stringify({ format: FORMAT, version: VERSION, key: tuningKey(gpu), adapter: adapterIdentity(gpu), date: new Date().toISOString(), entries: t.entries }, null, 1)}\n`;
}

const VARIANTS = new Set(['rows', 'tile128', 'tile64v', 'tile64', 'tc', 'tc_direct']);

function parseChoice(v: unknown, where: string): MatmulChoice {
  const c = v as Partial<MatmulChoice> | null;
  if (!c || typeof c !== 'object' || typeof c.variant !== 'string' || !VARIANTS.has(c.variant)) throw new TuningError(`${where}: no known kernel variant`);
  if (c.tcTile !== undefined && typeof c.tcTile !== 'string') throw new TuningError(`${where}: tcTile is not a tile name`);
  if (c.tcSplits !== undefined && !Number.isInteger(c.tcSplits)) throw new TuningError(`${where}: tcSplits is not an integer`);
  if (c.tcStaged !== undefined && typeof c.tcStaged !== 'boolean') throw new TuningError(`${where}: tcStaged is not true or false`);
  return {
    variant: c.variant,
    ...(c.tcTile !== undefined ? { tcTile: c.tcTile } : {}),
    ...(c.tcSplits !== undefined ? { tcSplits: c.tcSplits } : {}),
    ...(c.tcStaged !== undefined ? { tcStaged: c.tcStaged } : {}),
  };
}

/** A table from its JSON text; `source` names it in errors. Checks the format and every entry's fields, and (with
 * the gpu) that the table was made for this adapter and that each choice runs here. */
export function parseTuning(text: string, source: string, gpu: Gpu): MatmulTuning {
  let json: { format?: unknown; version?: unknown; key?: unknown; entries?: unknown };
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new TuningError(`${source}: not valid JSON (${(e as Error).message}); delete it or run troupe tune again`);
  }
  if (json?.format !== FORMAT || json.version !== VERSION) throw new TuningError(`${source}: not a ${FORMAT} table of version ${VERSION}`);
  if (json.key !== tuningKey(gpu)) throw new TuningError(`${source}: measured on another adapter or kernel version (key ${String(json.key)}, this one ${tuningKey(gpu)})`);
  if (!Array.isArray(json.entries)) throw new TuningError(`${source}: no entries list`);
  const entries = json.entries.map((raw: Record<string, unknown>, i: number): TunedEntry => {
    const where = `${source}: entry ${i}`;
    for (const k of ['M', 'N', 'K'] as const) {
      if (!Number.isInteger(raw?.[k]) || (raw[k] as number) < 1) throw new TuningError(`${where}: ${k} is not a positive integer`);
    }
    for (const k of ['transA', 'transB'] as const) if (typeof raw[k] !== 'boolean') throw new TuningError(`${where}: ${k} is not true or false`);
    for (const k of ['a', 'b'] as const) if (raw[k] !== 'f32' && raw[k] !== 'f16') throw new TuningError(`${where}: ${k} is not f32 or f16`);
    for (const k of ['seconds', 'autoSeconds'] as const) {
      if (typeof raw[k] !== 'number' || !((raw[k] as number) > 0)) throw new TuningError(`${where}: ${k} is not a positive number`);
    }
    return {
      M: raw.M as number, N: raw.N as number, K: raw.K as number, transA: raw.transA as boolean, transB: raw.transB as boolean,
      a: raw.a as 'f32' | 'f16', b: raw.b as 'f32' | 'f16',
      choice: parseChoice(raw.choice, `${where} choice`), seconds: raw.seconds as number,
      auto: parseChoice(raw.auto, `${where} auto`), autoSeconds: raw.autoSeconds as number,
    };
  });
  const table = new MatmulTuning(entries, source);
  checkTuning(gpu, table);
  return table;
}

type Env = Record<string, string | undefined>;
const env = (): Env => (globalThis as { process?: { env?: Env } }).process?.env ?? {};
/** A browser page or worker: OPFS, and neither Node nor Deno (which have no navigator.storage, or no OPFS in it). */
const inBrowser = () =>
  !('Deno' in globalThis) && !(globalThis as { process?: { versions?: { node?: string } } }).process?.versions?.node &&
  typeof navigator !== 'undefined' && typeof navigator.storage?.getDirectory === 'function';
const OPFS = 'opfs:troupe-cache/';

async function opfsFolder(): Promise<FileSystemDirectoryHandle> {
  return (await navigator.storage.getDirectory()).getDirectoryHandle('troupe-cache', { create: true });
}

/** The directory of tables under Node and Deno. */
export function tuningDir(e: Env = env()): string {
  if (e.TROUPE_CACHE_DIR) return e.TROUPE_CACHE_DIR;
  if (e.XDG_CACHE_HOME) return `${e.XDG_CACHE_HOME}/troupe`;
  if (e.HOME) return `${e.HOME}/.cache/troupe`;
  throw new TuningError('no cache directory for tuned matmul tables: set TROUPE_CACHE_DIR (or HOME)');
}

/** Where this adapter's table is (or would be) kept: a file path, or `opfs:troupe-cache/<file>` in a browser. */
export function tuningLocation(gpu: Gpu): string {
  const name = `matmul-tuning-${tuningKey(gpu)}.json`;
  return inBrowser() ? `${OPFS}${name}` : `${tuningDir()}/${name}`;
}

export async function saveTuning(gpu: Gpu, t: MatmulTuning): Promise<string> {
  const where = tuningLocation(gpu);
  const text = serializeTuning(gpu, t);
  if (where.startsWith(OPFS)) {
    try {
      const writable = await (await (await opfsFolder()).getFileHandle(where.slice(OPFS.length), { create: true })).createWritable();
      await writable.write(text);
      await writable.close(); // the file changes only here, whole
    } catch (e) {
      throw new TuningError(`${where}: cannot be written (${(e as Error).message})`);
    }
    return where;
  }
  const spec = 'node:fs/promises'; // not resolved by browser bundlers
  const fs = (await import(/* @vite-ignore */ spec)) as typeof import('node:fs/promises');
  await fs.mkdir(tuningDir(), { recursive: true });
  await atomicWriteFile(where, text);
  return where;
}

/** This adapter's stored table, checked (parseTuning), or null where none was made. */
export async function loadTuning(gpu: Gpu): Promise<MatmulTuning | null> {
  const where = tuningLocation(gpu);
  if (where.startsWith(OPFS)) {
    let text: string;
    try {
      text = await (await (await opfsFolder()).getFileHandle(where.slice(OPFS.length))).getFile().then((f) => f.text());
    } catch (e) {
      if ((e as DOMException).name === 'NotFoundError') return null;
      throw new TuningError(`${where}: cannot be read (${(e as Error).message})`);
    }
    return parseTuning(text, where, gpu);
  }
  const spec = 'node:fs/promises';
  const fs = (await import(/* @vite-ignore */ spec)) as typeof import('node:fs/promises');
  let text: string;
  try {
    text = await fs.readFile(where, 'utf8');
  } catch (e) {
    if ((e as { code?: string }).code === 'ENOENT') return null;
    throw new TuningError(`${where}: cannot be read (${(e as Error).message})`);
  }
  return parseTuning(text, where, gpu);
}

/** Puts this adapter's stored table (if any) under matmul's auto policy, unless TROUPE_TUNE=off. Returns it, with
 * a line for the log, or null. */
export async function applyStoredTuning(gpu: Gpu): Promise<{ tuning: MatmulTuning; note: string } | null> {
  const mode = env().TROUPE_TUNE ?? 'on';
  if (mode !== 'on' && mode !== 'off') throw new TuningError(`TROUPE_TUNE=${mode}: expected on or off`);
  if (mode === 'off') return null;
  const tuning = await loadTuning(gpu);
  if (!tuning) return null;
  setMatmulTuning(gpu, tuning);
  return { tuning, note: `matmul: ${tuning.entries.length} products tuned for this GPU (${tuning.source}; TROUPE_TUNE=off ignores it)` };
}
