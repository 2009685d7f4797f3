import { describe, expect, it } from 'vitest';
import { bf16BitsToF32, f32ToBf16Bits, roundF16 } from '../../src/gpu/dtype.ts';
import {
  openSafetensors,
  readSafetensorsBytes,
  SafetensorsError,
  toF16Bits,
  toF32,
  writeSafetensors,
  type TensorData,
} from '../../src/model/safetensors.ts';
import { MemorySource } from '../../src/model/source.ts';
import { randn } from '../helpers/random.ts';

const enc = new TextEncoder();

/** A file from a raw header object and data bytes (to make corrupt files). */
function rawFile(header: unknown, data: Uint8Array | number = 0, headerText?: string): Uint8Array {
  const json = enc.encode(headerText ?? JSON.stringify(header));
  const body = typeof data === 'number' ? new Uint8Array(data) : data;
  const out = new Uint8Array(8 + json.length + body.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.length), true);
  out.set(json, 8);
  out.set(body, 8 + json.length);
  return out;
}

function bf16Round(x: Float32Array): Float32Array {
  return x.map((v) => bf16BitsToF32(f32ToBf16Bits(v)));
}

const A = randn(3 * 5, 1);
const B = randn(7, 2);
const C = randn(2 * 3 * 2, 3);
const TENSORS: TensorData[] = [
  { name: 'a', dtype: 'F32', shape: [3, 5], data: A },
  { name: 'b', dtype: 'F16', shape: [7], data: B },
  { name: 'c', dtype: 'BF16', shape: [2, 3, 2], data: C },
  { name: 'ids', dtype: 'I32', shape: [4], data: [5, -1, 70000, 0] },
  { name: 'big', dtype: 'I64', shape: [2], data: [2 ** 40 + 3, -7] },
  { name: 'mask', dtype: 'U8', shape: [3], data: [0, 1, 255] },
  { name: 'empty', dtype: 'F32', shape: [0, 4], data: [] },
];

async function open(files: Record<string, Uint8Array | string>, file?: string) {
  return openSafetensors(new MemorySource(files, 'dir'), file);
}

describe('safetensors', () => {
  it('round-trips every dtype through writeSafetensors and a FileSource', async () => {
    const bytes = writeSafetensors(TENSORS, { format: 'pt' });
    expect((new DataView(bytes.buffer).getUint32(0, true) + 8) % 8).toBe(0);
    const set = await open({ 'model.safetensors': bytes });
    expect(set.metadata).toEqual({ format: 'pt' });
    expect(set.names.sort()).toEqual(['a', 'b', 'big', 'c', 'empty', 'ids', 'mask']);
    expect(set.info('c').shape).toEqual([2, 3, 2]);
    expect(await set.readF32('a')).toEqual(A);
    expect(await set.readF32('b')).toEqual(roundF16(B));
    expect(await set.readF32('c')).toEqual(bf16Round(C));
    expect(await set.readInts('ids')).toEqual([5, -1, 70000, 0]);
    expect(await set.readInts('big')).toEqual([2 ** 40 + 3, -7]);
    expect(await set.readInts('mask')).toEqual([0, 1, 255]);
    expect(await set.readF32('empty')).toHaveLength(0);
    // slices of elements
    expect(toF32('F32', await set.readBytes('a', 4, 6))).toEqual(A.slice(4, 10));
    expect(toF32('BF16', await set.readBytes('c', 3, 5))).toEqual(bf16Round(C).slice(3, 8));
    expect(() => set.info('nope')).toThrow(/dir: no tensor nope/);
    await expect(set.readBytes('a', 10, 6)).rejects.toThrow(/tensor a: elements \[10, 16\) out of its 15/);
    const mem = readSafetensorsBytes(bytes, 'x.safetensors');
    expect(mem.tensors.get('b')!.values).toEqual(roundF16(B));
    expect(mem.tensors.get('ids')!.values).toEqual([5, -1, 70000, 0]);
  });

  it('converts bf16/f16/f32 bytes to f16 bits like the CPU rounding', () => {
    const x = randn(101, 4, 3);
    const f32 = new Uint8Array(x.buffer.slice(0));
    expect(toF32('F16', new Uint8Array(toF16Bits('F32', f32).buffer))).toEqual(roundF16(x));
    const bf = new Uint16Array(x.map((v) => f32ToBf16Bits(v)));
    expect(toF32('F16', new Uint8Array(toF16Bits('BF16', new Uint8Array(bf.buffer)).buffer))).toEqual(roundF16(bf16Round(x)));
    // an unaligned slice is copied, not misread
    const odd = new Uint8Array(f32.length + 1);
    odd.set(f32, 1);
    expect(toF32('F32', odd.subarray(1))).toEqual(x);
    expect(() => toF32('I32', f32, 'tensor t')).toThrow(/tensor t: dtype I32 is not a float type/);
  });

  it('opens sharded checkpoints through model.safetensors.index.json', async () => {
    const s1 = writeSafetensors(TENSORS.slice(0, 2));
    const s2 = writeSafetensors(TENSORS.slice(2, 4));
    const index = { metadata: { total_size: 0 }, weight_map: { a: 's-1.safetensors', b: 's-1.safetensors', c: 's-2.safetensors', ids: 's-2.safetensors' } };
    const set = await open({ 'model.safetensors.index.json': JSON.stringify(index), 's-1.safetensors': s1, 's-2.safetensors': s2 });
    expect(set.names.sort()).toEqual(['a', 'b', 'c', 'ids']);
    expect(set.info('c').file).toBe('s-2.safetensors');
    expect(await set.readF32('c')).toEqual(bf16Round(C));
    expect(await set.readF32('a')).toEqual(A);
  });

  describe('corrupt or missing files name the file (with its directory) and tensor', () => {
    const cases: [string, Record<string, Uint8Array | string>, RegExp][] = [
      ['missing file', {}, /dir: no model.safetensors or model.safetensors.index.json/],
      ['file shorter than the length field', { 'model.safetensors': new Uint8Array(5) }, /dir\/model.safetensors: 5 bytes, too short.*truncated header/],
      ['truncated header', { 'model.safetensors': rawFile({ a: { dtype: 'F32', shape: [1], data_offsets: [0, 4] } }, 4).subarray(0, 20) }, /model.safetensors: header of \d+ bytes runs past the end of the file \(20 bytes\): truncated header/],
      ['bad JSON', { 'model.safetensors': rawFile(null, 0, '{"a": {"dtype": "F32",') }, /dir\/model.safetensors: header is not valid JSON/],
      ['header not an object', { 'model.safetensors': rawFile([1, 2]) }, /header is not a JSON object/],
      ['unknown dtype', { 'model.safetensors': rawFile({ w: { dtype: 'F64', shape: [1], data_offsets: [0, 8] } }, 8) }, /dir\/model.safetensors: tensor w: unknown dtype "F64"/],
      ['bad shape', { 'model.safetensors': rawFile({ w: { dtype: 'F32', shape: [-1], data_offsets: [0, 4] } }, 4) }, /tensor w: bad shape \[-1\]/],
      ['bad offsets', { 'model.safetensors': rawFile({ w: { dtype: 'F32', shape: [1], data_offsets: [8, 4] } }, 8) }, /tensor w: bad data_offsets \[8,4\]/],
      ['shape/byte mismatch', { 'model.safetensors': rawFile({ w: { dtype: 'F32', shape: [2, 3], data_offsets: [0, 20] } }, 24) }, /tensor w: shape \[2,3\] of F32 needs 24 bytes but data_offsets \[0, 20\] hold 20/],
      ['offset out of range', { 'model.safetensors': rawFile({ w: { dtype: 'F32', shape: [4], data_offsets: [16, 32] } }, 24) }, /tensor w: data \[16, 32\) runs past the end of the data \(24 bytes\)/],
      ['truncated tensor', { 'model.safetensors': writeSafetensors(TENSORS.slice(0, 2)).subarray(0, -3) }, /dir\/model.safetensors: tensor b: data \[\d+, \d+\) runs past the end of the data.*truncated file/],
      ['overlapping tensors', { 'model.safetensors': rawFile({ u: { dtype: 'F32', shape: [4], data_offsets: [0, 16] }, v: { dtype: 'F32', shape: [2], data_offsets: [8, 16] } }, 16) }, /model.safetensors: tensors u and v overlap/],
      ['bad __metadata__', { 'model.safetensors': rawFile({ __metadata__: { n: 1 } }) }, /__metadata__ must map strings to strings/],
      ['index not JSON', { 'model.safetensors.index.json': '{weight_map' }, /model.safetensors.index.json: not valid JSON/],
      ['index without weight_map', { 'model.safetensors.index.json': '{"metadata": {}}' }, /model.safetensors.index.json: weight_map must map/],
      ['missing shard', { 'model.safetensors.index.json': JSON.stringify({ weight_map: { a: 's-1.safetensors', b: 's-2.safetensors' } }), 's-1.safetensors': writeSafetensors(TENSORS.slice(0, 1)) }, /model.safetensors.index.json: shard s-2.safetensors is missing from dir/],
      ['tensor in index absent from shard', { 'model.safetensors.index.json': JSON.stringify({ weight_map: { a: 's-1.safetensors', zz: 's-1.safetensors' } }), 's-1.safetensors': writeSafetensors(TENSORS.slice(0, 1)) }, /tensor zz is listed in shard s-1.safetensors but absent from it/],
      ['shard tensor not in index', { 'model.safetensors.index.json': JSON.stringify({ weight_map: { a: 's-1.safetensors' } }), 's-1.safetensors': writeSafetensors(TENSORS.slice(0, 2)) }, /s-1.safetensors: tensor b is not listed for this shard/],
      ['absurd header length', { 'model.safetensors': (() => { const b = new Uint8Array(16); new DataView(b.buffer).setBigUint64(0, 2n ** 40n, true); return b; })() }, /header length 1099511627776 is over/],
    ];
    for (const [what, files, re] of cases) {
      it(what, async () => {
        const p = open(files);
        await expect(p).rejects.toThrow(re);
        await expect(open(files)).rejects.toBeInstanceOf(SafetensorsError);
      });
    }

    it('a file shortened after its header was read fails the read, naming the file', async () => {
      const full = writeSafetensors(TENSORS.slice(0, 1));
      const files: Record<string, Uint8Array> = { 'model.safetensors': full };
      const src = new MemorySource(files, 'dir');
      const set = await openSafetensors(src);
      (src as unknown as { files: Map<string, Uint8Array> }).files.set('model.safetensors', full.subarray(0, full.length - 8));
      await expect(set.readF32('a')).rejects.toThrow(/dir: model.safetensors: read of 60 bytes at \d+ runs past its end.*truncated/);
    });
  });

  it('writeSafetensors rejects wrong sizes and duplicates', () => {
    expect(() => writeSafetensors([{ name: 'w', dtype: 'F32', shape: [2, 2], data: [1, 2, 3] }])).toThrow(/tensor w: 3 values for shape \[2,2\] \(4\)/);
    expect(() => writeSafetensors([{ name: 'w', dtype: 'F16', shape: [2], data: new Uint8Array(3) }])).toThrow(/tensor w: 3 bytes/);
    expect(() => writeSafetensors([TENSORS[0]!, TENSORS[0]!])).toThrow(/duplicate tensor a/);
  });
});
