import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DirectorySource, FilesSource, MemorySource, SourceError, UrlSource, type FileSource } from '../../src/model/source.ts';

const DATA = new Uint8Array(5000).map((_, i) => (i * 7 + 3) & 255);
const TEXT = '{"hello": "wörld ✓"}';

/** The same checks for every kind of source holding data.bin, sub/config.json and no missing.bin. */
async function checkSource(src: FileSource): Promise<void> {
  expect(await src.exists('data.bin')).toBe(true);
  expect(await src.exists('missing.bin')).toBe(false);
  expect(await src.size('data.bin')).toBe(DATA.length);
  expect(await src.read('data.bin', 0, 10)).toEqual(DATA.slice(0, 10));
  expect(await src.read('data.bin', 4321, 679)).toEqual(DATA.slice(4321));
  expect(await src.read('data.bin', 17, 0)).toEqual(new Uint8Array(0));
  expect(await src.readText('sub/config.json')).toBe(TEXT);
  await expect(src.size('missing.bin')).rejects.toThrow(/missing.bin.*missing|missing file.*missing.bin/);
  await expect(src.read('missing.bin', 0, 1)).rejects.toBeInstanceOf(SourceError);
  await expect(src.read('data.bin', 4990, 11)).rejects.toThrow(/data.bin: read of 11 bytes at 4990 runs past its end \(5000 bytes\)/);
  await expect(src.read('data.bin', -1, 2)).rejects.toThrow(/data.bin: bad read range/);
}

describe('DirectorySource', () => {
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'troupe-src-'));
    await mkdir(join(dir, 'sub'));
    await writeFile(join(dir, 'data.bin'), DATA);
    await writeFile(join(dir, 'sub/config.json'), TEXT);
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reads exact ranges and names missing files', async () => {
    const src = new DirectorySource(dir);
    await checkSource(src);
    expect(await src.list()).toEqual(['data.bin', 'sub/config.json']);
    await expect(new DirectorySource(join(dir, 'nope')).readText('config.json')).rejects.toThrow(/nope\/config.json: missing file/);
  });
});

describe('FilesSource', () => {
  it('matches files by relative path (webkitRelativePath) or by name', async () => {
    const data = new File([DATA], 'data.bin');
    Object.defineProperty(data, 'webkitRelativePath', { value: 'model-dir/data.bin' });
    const cfg = new File([TEXT], 'config.json');
    Object.defineProperty(cfg, 'webkitRelativePath', { value: 'model-dir/sub/config.json' });
    const src = new FilesSource([data, cfg]);
    await checkSource(src);
    expect(await src.list()).toEqual(['data.bin', 'sub/config.json']);
    // Loose dropped files: matched by base name.
    const loose = new FilesSource([new File([TEXT], 'config.json'), ['data.bin', new File([DATA], 'x')] as const]);
    expect(await loose.readText('config.json')).toBe(TEXT);
    await checkSource(loose);
    expect(() => new FilesSource([new File(['a'], 'a.txt'), new File(['b'], 'a.txt')])).toThrow(/two files named a.txt/);
  });
});

describe('MemorySource', () => {
  it('behaves like the others', async () => {
    await checkSource(new MemorySource({ 'data.bin': DATA, 'sub/config.json': TEXT }));
  });
});

describe('UrlSource', () => {
  type Mode = 'range' | 'ignore-range' | 'no-head-length' | 'shifted-range' | 'hidden-size';
  let server: Server;
  let base = '';
  const requests: string[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      const [, mode, ...rest] = (req.url ?? '').split('/');
      const name = decodeURIComponent(rest.join('/'));
      requests.push(`${req.method} ${mode} ${name} ${req.headers.range ?? ''}`);
      const body = name === 'data.bin' ? DATA : name === 'sub/config.json' ? new TextEncoder().encode(TEXT) : null;
      if (!body) {
        res.writeHead(404).end('not found');
        return;
      }
      const m = /bytes=(\d+)-(\d+)/.exec(req.headers.range ?? '');
      if (req.method === 'HEAD') {
        if (mode === 'no-head-length' || mode === 'hidden-size') res.writeHead(200, { 'transfer-encoding': 'chunked' }).end();
        else res.writeHead(200, { 'content-length': body.length, 'accept-ranges': 'bytes' }).end();
        return;
      }
      if (m && mode !== 'ignore-range') {
        // shifted-range answers from an earlier start than asked (allowed: Content-Range says where).
        const start = mode === 'shifted-range' ? Math.max(0, Number(m[1]) - 3) : Number(m[1]);
        const end = Math.min(Number(m[2]), body.length - 1);
        // hidden-size: a Content-Range the client cannot read (like an unexposed cross-origin header).
        const range = mode === 'hidden-size' ? {} : { 'content-range': `bytes ${start}-${end}/${body.length}` };
        res.writeHead(206, { ...range, 'content-length': end - start + 1 });
        res.end(body.subarray(start, end + 1));
        return;
      }
      res.writeHead(200, { 'content-length': body.length }).end(body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const addr = server.address() as { port: number };
    base = `http://127.0.0.1:${addr.port}`;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  for (const mode of ['range', 'ignore-range', 'no-head-length', 'shifted-range'] as Mode[]) {
    it(`reads files from a server (${mode})`, async () => {
      requests.length = 0;
      const src = new UrlSource(`${base}/${mode}/`, { opfs: false });
      await checkSource(src);
      const gets = requests.filter((r) => r.startsWith('GET') && r.includes('data.bin'));
      if (mode === 'ignore-range') expect(gets.length).toBe(1); // the whole body is kept, not fetched again
      if (mode === 'range') expect(gets.every((r) => /bytes=\d+-\d+/.test(r))).toBe(true);
    });
  }

  it('refuses to guess a size it cannot learn', async () => {
    const src = new UrlSource(`${base}/hidden-size/`, { opfs: false });
    await expect(src.size('data.bin')).rejects.toThrow(/hidden-size\/data.bin: size unknown/);
  });

  it('names the URL when the server is unreachable', async () => {
    const src = new UrlSource('http://127.0.0.1:1/m', { opfs: false });
    await expect(src.size('config.json')).rejects.toThrow(/http:\/\/127.0.0.1:1\/m\/config.json: request failed/);
  });
});
