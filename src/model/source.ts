// Where model files come from: a directory (Node, Deno), browser File objects (directory picker, drag and
// drop), a URL base read with HTTP Range requests (cached in OPFS when the browser has it), or memory.
// Every read returns exactly the bytes asked for, or throws a SourceError naming the file.

export interface FileSource {
  /** Where the files are, for messages: a path, a URL, "files", "memory". */
  readonly name: string;
  /** Names of the files, when the source can enumerate them (a URL base cannot). */
  list?(): Promise<string[]>;
  exists(name: string): Promise<boolean>;
  /** Size in bytes; throws SourceError when the file is missing. */
  size(name: string): Promise<number>;
  /** Exactly `length` bytes from `offset`; throws SourceError when the file is missing or shorter. */
  read(name: string, offset: number, length: number): Promise<Uint8Array>;
  readText(name: string): Promise<string>;
}

export class SourceError extends Error {
  override name = 'SourceError';
}

function checkRange(where: string, file: string, size: number, offset: number, length: number): void {
  if (!Number.isInteger(offset) || !Number.isInteger(length) || offset < 0 || length < 0) {
    throw new SourceError(`${where}: ${file}: bad read range offset ${offset} length ${length}`);
  }
  if (offset + length > size) {
    throw new SourceError(`${where}: ${file}: read of ${length} bytes at ${offset} runs past its end (${size} bytes): truncated file?`);
  }
}

// ---- a directory on disk (node:fs/promises exists in Node and Deno) ----

type Fs = typeof import('node:fs/promises');
let fsModule: Promise<Fs> | null = null;
function fs(): Promise<Fs> {
  // A variable specifier keeps browser bundlers from trying to resolve the Node module.
  const spec = 'node:fs/promises';
  return (fsModule ??= import(/* @vite-ignore */ spec) as Promise<Fs>);
}

function joinPath(dir: string, name: string): string {
  return dir.endsWith('/') ? dir + name : `${dir}/${name}`;
}

/** A file of a source as messages name it: the source's path or URL joined with the file name. */
export function sourcePath(source: FileSource, file: string): string {
  return joinPath(source.name, file);
}

export class DirectorySource implements FileSource {
  constructor(readonly name: string) {}

  private path(file: string): string {
    return joinPath(this.name, file);
  }

  async list(): Promise<string[]> {
    const entries = await (await fs()).readdir(this.name, { recursive: true, withFileTypes: true });
    return entries
      .filter((e) => e.isFile())
      .map((e) => {
        const parent = (e as { parentPath?: string; path?: string }).parentPath ?? (e as { path?: string }).path ?? this.name;
        const rel = parent.length > this.name.length ? parent.slice(this.name.replace(/\/$/, '').length + 1) : '';
        return rel ? `${rel}/${e.name}` : e.name;
      })
      .sort();
  }

  async exists(file: string): Promise<boolean> {
    try {
      return (await (await fs()).stat(this.path(file))).isFile();
    } catch {
      return false;
    }
  }

  async size(file: string): Promise<number> {
    try {
      const st = await (await fs()).stat(this.path(file));
      if (!st.isFile()) throw new SourceError(`${this.path(file)}: not a file`);
      return st.size;
    } catch (e) {
      if (e instanceof SourceError) throw e;
      throw new SourceError(`${this.path(file)}: missing file (${(e as Error).message})`);
    }
  }

  async read(file: string, offset: number, length: number): Promise<Uint8Array> {
    const size = await this.size(file);
    checkRange(this.name, file, size, offset, length);
    const handle = await (await fs()).open(this.path(file), 'r');
    try {
      const out = new Uint8Array(length);
      let done = 0;
      while (done < length) {
        const { bytesRead } = await handle.read(out, done, length - done, offset + done);
        if (bytesRead === 0) throw new SourceError(`${this.path(file)}: file ended after ${offset + done} bytes: truncated file?`);
        done += bytesRead;
      }
      return out;
    } finally {
      await handle.close();
    }
  }

  async readText(file: string): Promise<string> {
    const size = await this.size(file);
    return new TextDecoder().decode(await this.read(file, 0, size));
  }
}

// ---- browser File objects ----

/** The path of a File inside the picked folder: webkitRelativePath without the folder's own name. */
function relativePath(f: File): string {
  const rel = (f as File & { webkitRelativePath?: string }).webkitRelativePath;
  if (!rel) return f.name;
  const slash = rel.indexOf('/');
  return slash < 0 ? rel : rel.slice(slash + 1);
}

export class FilesSource implements FileSource {
  readonly name: string;
  private readonly byPath = new Map<string, File>();

  /** `files` from <input type=file webkitdirectory>, showDirectoryPicker or drag and drop; or [path, File] pairs. */
  constructor(files: Iterable<File | readonly [string, File]>, name = 'files') {
    this.name = name;
    for (const f of files) {
      const [path, file] = f instanceof Blob ? [relativePath(f as File), f as File] : f;
      if (this.byPath.has(path)) throw new SourceError(`${name}: two files named ${path}`);
      this.byPath.set(path, file);
    }
  }

  /** Every file under a directory handle (showDirectoryPicker, or a dropped folder's getAsFileSystemHandle). */
  static async fromDirectoryHandle(dir: FileSystemDirectoryHandle, name = dir.name): Promise<FilesSource> {
    const files: [string, File][] = [];
    const walk = async (d: FileSystemDirectoryHandle, prefix: string): Promise<void> => {
      for await (const [entry, handle] of (d as unknown as { entries(): AsyncIterable<[string, FileSystemHandle]> }).entries()) {
        if (handle.kind === 'file') files.push([prefix + entry, await (handle as FileSystemFileHandle).getFile()]);
        else await walk(handle as FileSystemDirectoryHandle, `${prefix}${entry}/`);
      }
    };
    await walk(dir, '');
    return new FilesSource(files, name);
  }

  private file(name: string): File | undefined {
    const exact = this.byPath.get(name);
    if (exact) return exact;
    // Dropped loose files have no folder: match by base name when unambiguous.
    const base = name.slice(name.lastIndexOf('/') + 1);
    const hits = [...this.byPath].filter(([p]) => p.slice(p.lastIndexOf('/') + 1) === base);
    return hits.length === 1 ? hits[0]![1] : undefined;
  }

  private need(name: string): File {
    const f = this.file(name);
    if (!f) throw new SourceError(`${this.name}: missing file ${name} (have: ${[...this.byPath.keys()].join(', ') || 'none'})`);
    return f;
  }

  async list(): Promise<string[]> {
    return [...this.byPath.keys()].sort();
  }

  async exists(name: string): Promise<boolean> {
    return this.file(name) !== undefined;
  }

  async size(name: string): Promise<number> {
    return this.need(name).size;
  }

  async read(name: string, offset: number, length: number): Promise<Uint8Array> {
    const f = this.need(name);
    checkRange(this.name, name, f.size, offset, length);
    return new Uint8Array(await f.slice(offset, offset + length).arrayBuffer());
  }

  async readText(name: string): Promise<string> {
    return this.need(name).text();
  }
}

// ---- in memory (tests, generated files) ----

export class MemorySource implements FileSource {
  private readonly files: Map<string, Uint8Array>;
  constructor(files: Record<string, Uint8Array | string>, readonly name = 'memory') {
    this.files = new Map(Object.entries(files).map(([k, v]) => [k, typeof v === 'string' ? new TextEncoder().encode(v) : v]));
  }

  private need(name: string): Uint8Array {
    const f = this.files.get(name);
    if (!f) throw new SourceError(`${this.name}: missing file ${name}`);
    return f;
  }

  async list(): Promise<string[]> {
    return [...this.files.keys()].sort();
  }

  async exists(name: string): Promise<boolean> {
    return this.files.has(name);
  }

  async size(name: string): Promise<number> {
    return this.need(name).length;
  }

  async read(name: string, offset: number, length: number): Promise<Uint8Array> {
    const f = this.need(name);
    checkRange(this.name, name, f.length, offset, length);
    return f.slice(offset, offset + length);
  }

  async readText(name: string): Promise<string> {
    return new TextDecoder().decode(this.need(name));
  }
}

// ---- a URL base over HTTP(S) ----

export interface UrlSourceOptions {
  fetch?: typeof fetch;
  /** Keep whole files in the Origin Private File System (browser) and read from there; default: when available. */
  opfs?: boolean;
}

/** Files under a URL base, e.g. https://huggingface.co/Qwen/Qwen3-0.6B/resolve/main/ */
export class UrlSource implements FileSource {
  readonly name: string;
  private readonly fetch: typeof fetch;
  private readonly useOpfs: boolean;
  private readonly sizes = new Map<string, Promise<number | null>>();
  /** Whole bodies of files whose server ignored Range (so we do not download them twice). */
  private readonly bodies = new Map<string, Uint8Array>();
  private readonly cached = new Map<string, Promise<File | null>>();

  constructor(base: string, opts: UrlSourceOptions = {}) {
    this.name = base.endsWith('/') ? base : base + '/';
    this.fetch = opts.fetch ?? globalThis.fetch.bind(globalThis);
    this.useOpfs = opts.opfs ?? (typeof navigator !== 'undefined' && typeof navigator.storage?.getDirectory === 'function');
  }

  private url(name: string): string {
    return this.name + name.split('/').map(encodeURIComponent).join('/');
  }

  /** Size from HEAD, else from a one-byte Range GET's Content-Range; null when the file is missing. */
  private probe(name: string): Promise<number | null> {
    let p = this.sizes.get(name);
    if (!p) {
      p = (async () => {
        const url = this.url(name);
        let head: Response;
        try {
          head = await this.fetch(url, { method: 'HEAD' });
        } catch (e) {
          throw new SourceError(`${url}: request failed: ${(e as Error).message}`);
        }
        if (head.status === 404 || head.status === 410) return null;
        const len = head.headers.get('content-length');
        // Content-Length of a HEAD can describe a compressed body; trust it only without content-encoding.
        if (head.ok && len !== null && !head.headers.get('content-encoding')) return Number(len);
        const res = await this.get(url, { Range: 'bytes=0-0' });
        if (res.status === 404 || res.status === 410) return null;
        if (!res.ok) throw new SourceError(`${url}: HTTP ${res.status} ${res.statusText}`);
        if (res.status === 206) {
          await res.body?.cancel();
          const total = /\/(\d+)\s*$/.exec(res.headers.get('content-range') ?? '');
          if (total) return Number(total[1]);
          throw new SourceError(`${url}: size unknown: no Content-Length on HEAD and no readable Content-Range (cross-origin servers must expose it)`);
        }
        const body = new Uint8Array(await res.arrayBuffer());
        this.bodies.set(name, body);
        return body.length;
      })();
      this.sizes.set(name, p);
    }
    return p;
  }

  private async get(url: string, headers: Record<string, string> = {}): Promise<Response> {
    try {
      return await this.fetch(url, { headers });
    } catch (e) {
      throw new SourceError(`${url}: request failed: ${(e as Error).message}`);
    }
  }

  async exists(name: string): Promise<boolean> {
    return (await this.probe(name)) !== null;
  }

  async size(name: string): Promise<number> {
    const s = await this.probe(name);
    if (s === null) throw new SourceError(`${this.url(name)}: missing file (HTTP 404)`);
    return s;
  }

  async read(name: string, offset: number, length: number): Promise<Uint8Array> {
    const size = await this.size(name);
    checkRange(this.name, name, size, offset, length);
    if (length === 0) return new Uint8Array(0);
    const body = this.bodies.get(name);
    if (body) return body.slice(offset, offset + length);
    const file = await this.opfsFile(name, size);
    if (file) return new Uint8Array(await file.slice(offset, offset + length).arrayBuffer());
    const url = this.url(name);
    const res = await this.get(url, { Range: `bytes=${offset}-${offset + length - 1}` });
    if (!res.ok) throw new SourceError(`${url}: HTTP ${res.status} ${res.statusText}`);
    const bytes = new Uint8Array(await res.arrayBuffer());
    if (res.status === 206) {
      // Servers may answer with a different start than asked: place the slice by Content-Range.
      const m = /bytes\s+(\d+)-(\d+)\//.exec(res.headers.get('content-range') ?? '');
      const start = m ? Number(m[1]) : offset;
      const skip = offset - start;
      if (skip < 0 || skip + length > bytes.length) {
        throw new SourceError(`${url}: Range reply ${res.headers.get('content-range')} does not cover bytes ${offset}-${offset + length - 1}`);
      }
      return bytes.subarray(skip, skip + length);
    }
    // 200: the server ignored Range and sent the whole file.
    if (bytes.length !== size) throw new SourceError(`${url}: got ${bytes.length} bytes, expected ${size}: truncated download?`);
    this.bodies.set(name, bytes);
    return bytes.slice(offset, offset + length);
  }

  async readText(name: string): Promise<string> {
    const size = await this.size(name);
    return new TextDecoder().decode(await this.read(name, 0, size));
  }

  /** The file from OPFS, downloading it there (streamed, never whole in memory) on first use; null without OPFS. */
  private opfsFile(name: string, size: number): Promise<File | null> {
    if (!this.useOpfs) return Promise.resolve(null);
    let p = this.cached.get(name);
    if (!p) {
      p = (async () => {
        const root = await navigator.storage.getDirectory();
        const dir = await root.getDirectoryHandle('troupe-cache', { create: true });
        const key = await cacheKey(this.url(name));
        const handle = await dir.getFileHandle(key, { create: true });
        const have = await handle.getFile();
        if (have.size === size) return have;
        const url = this.url(name);
        const res = await this.get(url);
        if (!res.ok || !res.body) throw new SourceError(`${url}: HTTP ${res.status} ${res.statusText}`);
        const writable = await handle.createWritable();
        await res.body.pipeTo(writable);
        const file = await handle.getFile();
        if (file.size !== size) {
          await dir.removeEntry(key);
          throw new SourceError(`${url}: downloaded ${file.size} bytes, expected ${size}: truncated download?`);
        }
        return file;
      })();
      this.cached.set(name, p);
      p.catch(() => this.cached.delete(name));
    }
    return p;
  }
}

async function cacheKey(url: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(url)));
  return [...digest.slice(0, 16)].map((b) => b.toString(16).padStart(2, '0')).join('');
}
