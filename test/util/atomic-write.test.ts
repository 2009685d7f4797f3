import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writePeftDir } from '../../src/model/peft.ts';
import { atomicWriteFile, checkWritable, OutputPathError } from '../../src/util/atomic-write.ts';

describe('atomicWriteFile / checkWritable', () => {
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'troupe-atomic-'));
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('writes bytes and text, replaces an existing file whole, and leaves no temp file', async () => {
    const p = join(dir, 'a.bin');
    await atomicWriteFile(p, new Uint8Array([1, 2, 3]));
    expect([...(await readFile(p))]).toEqual([1, 2, 3]);
    await atomicWriteFile(p, 'hello\n');
    expect(await readFile(p, 'utf8')).toBe('hello\n');
    const big = new Uint8Array(3 * 2 ** 20).map((_, i) => i * 7);
    await atomicWriteFile(p, big);
    expect((await readFile(p)).length).toBe(big.length);
    expect(await readdir(dir)).toEqual(['a.bin']);
  });

  it('fails on a missing directory without creating anything', async () => {
    await expect(atomicWriteFile(join(dir, 'no', 'x.bin'), 'x')).rejects.toThrow();
    expect(await readdir(dir)).not.toContain('no');
  });

  it('checkWritable accepts new and existing files, refuses a missing directory or a directory, naming the path', async () => {
    await checkWritable(join(dir, 'new.bin'));
    await writeFile(join(dir, 'old.bin'), 'x');
    await checkWritable(join(dir, 'old.bin'));
    await expect(checkWritable(join(dir, 'missing', 'f.bin'))).rejects.toThrow(OutputPathError);
    await expect(checkWritable(join(dir, 'missing', 'f.bin'))).rejects.toThrow(`output path ${join(dir, 'missing', 'f.bin')}: directory ${join(dir, 'missing')} does not exist`);
    await mkdir(join(dir, 'sub'));
    await expect(checkWritable(join(dir, 'sub'))).rejects.toThrow(`output path ${join(dir, 'sub')} is a directory`);
    await expect(checkWritable(join(dir, 'old.bin', 'f'))).rejects.toThrow(/is not a directory/);
    expect(await readdir(dir)).not.toContain('new.bin');
  });

  it('writePeftDir writes both files atomically (no temp files left) into a created directory', async () => {
    const out = join(dir, 'adapter');
    await writePeftDir(out, { 'adapter_config.json': new TextEncoder().encode('{}'), 'adapter_model.safetensors': new Uint8Array([9, 9]) });
    expect((await readdir(out)).sort()).toEqual(['adapter_config.json', 'adapter_model.safetensors']);
    expect(await readFile(join(out, 'adapter_config.json'), 'utf8')).toBe('{}');
  });
});
