// Bytes of a dataset file from a local path (node:fs: Node and Deno), a URL (fetch: everywhere, the
// browser included) or a Blob/File (a browser file picker).

export class DatasetReadError extends Error {
  override name = 'DatasetReadError';
}

export type DataSource = string | Blob;

const URL_SCHEME = /^(https?|blob|data):/i;

function inBrowser(): boolean {
  const g = globalThis as { window?: unknown; Deno?: unknown; process?: { versions?: { node?: string } } };
  return g.window !== undefined && g.Deno === undefined && g.process?.versions?.node === undefined;
}

/** A name for messages and format detection. */
export function sourceName(source: DataSource): string {
  if (typeof source === 'string') return source;
  return (source as Blob & { name?: string }).name ?? 'blob';
}

export async function readBytes(source: DataSource): Promise<Uint8Array> {
  if (typeof source !== 'string') return new Uint8Array(await source.arrayBuffer());
  if (URL_SCHEME.test(source) || inBrowser()) {
    let res: Response;
    try {
      res = await fetch(source);
    } catch (e) {
      throw new DatasetReadError(`dataset ${source}: fetch failed: ${(e as Error).message}`);
    }
    if (!res.ok) throw new DatasetReadError(`dataset ${source}: HTTP ${res.status} ${res.statusText}`);
    return new Uint8Array(await res.arrayBuffer());
  }
  // Kept out of static imports so browser bundles never pull node:fs.
  const fsModule = 'node:fs/promises';
  const fs = (await import(/* @vite-ignore */ fsModule)) as typeof import('node:fs/promises');
  const path = source.startsWith('file:') ? new URL(source) : source;
  try {
    return new Uint8Array(await fs.readFile(path));
  } catch (e) {
    const code = (e as { code?: string }).code;
    throw new DatasetReadError(`dataset ${source}: ${code === 'ENOENT' ? 'file not found' : (e as Error).message}`);
  }
}
