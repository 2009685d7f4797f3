// Files that are either complete or absent: atomicWriteFile writes a temporary file in the target's
// directory, fsyncs it and renames it over the target (a rename within one directory is atomic on POSIX
// file systems), so an interrupted run never leaves half a file under the final name. checkWritable lets
// a command refuse an unusable output path before it starts minutes of work. Node and Deno (both through
// node:fs/promises, loaded lazily so browser bundles do not resolve it).
type Fs = typeof import('node:fs/promises');

let fsPromise: Promise<Fs> | null = null;
function fs(): Promise<Fs> {
  const spec = 'node:fs/promises'; // not resolved by browser bundlers
  fsPromise ??= import(/* @vite-ignore */ spec) as Promise<Fs>;
  return fsPromise;
}

export class OutputPathError extends Error {
  override name = 'OutputPathError';
}

function dirOf(path: string): string {
  const i = path.lastIndexOf('/');
  if (i < 0) return '.';
  return i === 0 ? '/' : path.slice(0, i);
}

let counter = 0;

/** Writes `data` to `path` atomically: a temp file beside it, fsync, rename. The temp file is removed on failure. */
export async function atomicWriteFile(path: string, data: Uint8Array | string): Promise<void> {
  const f = await fs();
  const base = path.slice(path.lastIndexOf('/') + 1);
  const tmp = `${dirOf(path)}/.${base}.${Date.now().toString(36)}-${(counter++).toString(36)}-${Math.random().toString(36).slice(2, 8)}.tmp`;
  let handle: Awaited<ReturnType<Fs['open']>> | null = null;
  try {
    handle = await f.open(tmp, 'wx');
    await handle.writeFile(data);
    await handle.sync();
    await handle.close();
    handle = null;
    await f.rename(tmp, path);
  } catch (e) {
    if (handle) await handle.close().catch(() => {});
    await f.rm(tmp, { force: true }).catch(() => {});
    throw e;
  }
  // The rename itself is durable once the directory is synced (not possible on every platform).
  try {
    const d = await f.open(dirOf(path), 'r');
    try {
      await d.sync();
    } finally {
      await d.close();
    }
  } catch {
    // directories cannot be opened or synced everywhere (Windows, some Deno permissions): best effort
  }
}

/**
 * Fails, naming the path, when `path` could not be written: its directory is missing, is not a
 * directory or is not writable, or `path` is itself a directory. Creates nothing.
 */
export async function checkWritable(path: string): Promise<void> {
  const f = await fs();
  if (path === '') throw new OutputPathError('output path is empty');
  const st = await f.stat(path).catch((e: NodeJS.ErrnoException) => {
    if (e.code === 'ENOENT' || e.code === 'ENOTDIR') return null; // the directory checks below say which
    throw new OutputPathError(`output path ${path}: ${e.message}`);
  });
  if (st?.isDirectory()) throw new OutputPathError(`output path ${path} is a directory`);
  const dir = dirOf(path);
  const ds = await f.stat(dir).catch(() => null);
  if (ds === null) throw new OutputPathError(`output path ${path}: directory ${dir} does not exist`);
  if (!ds.isDirectory()) throw new OutputPathError(`output path ${path}: ${dir} is not a directory`);
  try {
    await f.access(dir, 2 /* W_OK */);
    if (st) await f.access(path, 2);
  } catch {
    throw new OutputPathError(`output path ${path}: ${st ? 'the file' : `directory ${dir}`} is not writable`);
  }
}
