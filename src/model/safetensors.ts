// safetensors: an 8-byte little-endian header length, a JSON header {name: {dtype, shape, data_offsets}},
// then the tensor bytes. One file, or shards listed by model.safetensors.index.json. Headers are checked
// completely before any tensor is read; tensor bytes are read lazily, in slices, from a FileSource.
import { f16BitsToF32, f32ToBf16Bits, f32ToF16Bits } from '../gpu/dtype.ts';
import { type FileSource, sourcePath } from './source.ts';

export type StDType = 'F32' | 'F16' | 'BF16' | 'I32' | 'I64' | 'U8';

export const ST_BYTES: Record<StDType, number> = { F32: 4, F16: 2, BF16: 2, I32: 4, I64: 8, U8: 1 };

export class SafetensorsError extends Error {
  override name = 'SafetensorsError';
}

export interface TensorInfo {
  name: string;
  dtype: StDType;
  shape: number[];
  /** The file (shard) holding it. */
  file: string;
  /** Absolute byte offset of the data in the file. */
  offset: number;
  byteLength: number;
}

export interface SafetensorsHeader {
  tensors: Map<string, TensorInfo>;
  metadata: Record<string, string>;
  /** Where the data section starts (8 + header length). */
  dataStart: number;
}

/** Headers larger than this are refused (the Rust reader's limit is 100 MB). */
const MAX_HEADER = 100_000_000;

function numel(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

/** Checks a header's JSON against a file of `fileSize` bytes; messages name the file as `label`. */
export function parseHeader(json: Uint8Array, file: string, fileSize: number, label = file): SafetensorsHeader {
  const dataStart = 8 + json.length;
  let header: unknown;
  try {
    header = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(json));
  } catch (e) {
    throw new SafetensorsError(`${label}: header is not valid JSON (${(e as Error).message})`);
  }
  if (typeof header !== 'object' || header === null || Array.isArray(header)) throw new SafetensorsError(`${label}: header is not a JSON object`);
  const dataSize = fileSize - dataStart;
  const tensors = new Map<string, TensorInfo>();
  let metadata: Record<string, string> = {};
  const spans: [number, number, string][] = [];
  for (const [name, entry] of Object.entries(header as Record<string, unknown>)) {
    if (name === '__metadata__') {
      if (typeof entry !== 'object' || entry === null || Object.values(entry).some((v) => typeof v !== 'string')) {
        throw new SafetensorsError(`${label}: __metadata__ must map strings to strings`);
      }
      metadata = entry as Record<string, string>;
      continue;
    }
    const where = `${label}: tensor ${name}`;
    if (typeof entry !== 'object' || entry === null) throw new SafetensorsError(`${where}: entry is not an object`);
    const { dtype, shape, data_offsets: offsets } = entry as Record<string, unknown>;
    if (typeof dtype !== 'string' || !(dtype in ST_BYTES)) {
      throw new SafetensorsError(`${where}: unknown dtype ${JSON.stringify(dtype)} (supported: ${Object.keys(ST_BYTES).join(', ')})`);
    }
    if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d >= 0)) {
      throw new SafetensorsError(`${where}: bad shape ${JSON.stringify(shape)}`);
    }
    if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every((o) => Number.isInteger(o) && o >= 0) || offsets[0] > offsets[1]) {
      throw new SafetensorsError(`${where}: bad data_offsets ${JSON.stringify(offsets)}`);
    }
    const [begin, end] = offsets as [number, number];
    const bytes = numel(shape) * ST_BYTES[dtype as StDType];
    if (end - begin !== bytes) {
      throw new SafetensorsError(`${where}: shape [${shape}] of ${dtype} needs ${bytes} bytes but data_offsets [${begin}, ${end}] hold ${end - begin}`);
    }
    if (end > dataSize) {
      throw new SafetensorsError(`${where}: data [${begin}, ${end}) runs past the end of the data (${dataSize} bytes): truncated file or offset out of range`);
    }
    spans.push([begin, end, name]);
    tensors.set(name, { name, dtype: dtype as StDType, shape: shape as number[], file, offset: dataStart + begin, byteLength: bytes });
  }
  spans.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  for (let i = 1; i < spans.length; i++) {
    const [b, , name] = spans[i]!;
    const [, pe, prev] = spans[i - 1]!;
    if (b < pe && spans[i]![1] > b) throw new SafetensorsError(`${label}: tensors ${prev} and ${name} overlap (data offsets ${b} < ${pe})`);
  }
  return { tensors, metadata, dataStart };
}

function headerLength(bytes: Uint8Array, file: string, fileSize: number): number {
  if (fileSize < 8) throw new SafetensorsError(`${file}: ${fileSize} bytes, too short for the 8-byte header length: truncated header`);
  const n = Number(new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, true));
  if (n > MAX_HEADER) throw new SafetensorsError(`${file}: header length ${n} is over ${MAX_HEADER} bytes: not a safetensors file?`);
  if (8 + n > fileSize) throw new SafetensorsError(`${file}: header of ${n} bytes runs past the end of the file (${fileSize} bytes): truncated header`);
  return n;
}

export async function readHeader(source: FileSource, file: string): Promise<SafetensorsHeader> {
  const size = await source.size(file);
  const head = await source.read(file, 0, Math.min(8, size));
  const where = sourcePath(source, file);
  const n = headerLength(head, where, size);
  return parseHeader(await source.read(file, 8, n), file, size, where);
}

/** The tensors of a checkpoint: one .safetensors file or an index of shards. */
export class SafetensorsSet {
  constructor(
    readonly source: FileSource,
    readonly tensors: Map<string, TensorInfo>,
    readonly metadata: Record<string, string>,
  ) {}

  get names(): string[] {
    return [...this.tensors.keys()];
  }

  info(name: string): TensorInfo {
    const t = this.tensors.get(name);
    if (!t) throw new SafetensorsError(`${this.source.name}: no tensor ${name}`);
    return t;
  }

  /** Raw bytes of elements [start, start + count) of a tensor. */
  async readBytes(name: string, start = 0, count?: number): Promise<Uint8Array> {
    const t = this.info(name);
    const per = ST_BYTES[t.dtype];
    const n = count ?? t.byteLength / per - start;
    if (start < 0 || n < 0 || (start + n) * per > t.byteLength) {
      throw new SafetensorsError(`${sourcePath(this.source, t.file)}: tensor ${name}: elements [${start}, ${start + n}) out of its ${t.byteLength / per}`);
    }
    return this.source.read(t.file, t.offset + start * per, n * per);
  }

  /** A whole float tensor as f32 (for tests and small tensors). */
  async readF32(name: string): Promise<Float32Array> {
    const t = this.info(name);
    return toF32(t.dtype, await this.readBytes(name), `${t.file}: tensor ${name}`);
  }

  /** A whole integer tensor (I32, I64 within 2^53, U8) as numbers. */
  async readInts(name: string): Promise<number[]> {
    const t = this.info(name);
    return toInts(t.dtype, await this.readBytes(name), `${t.file}: tensor ${name}`);
  }
}

/** Opens `file`, or (by default) model.safetensors.index.json's shards, else model.safetensors. */
export async function openSafetensors(source: FileSource, file?: string): Promise<SafetensorsSet> {
  if (file !== undefined && !file.endsWith('.index.json')) {
    const h = await readHeader(source, file);
    return new SafetensorsSet(source, h.tensors, h.metadata);
  }
  const index = file ?? 'model.safetensors.index.json';
  if (file !== undefined || (await source.exists(index))) return openSharded(source, index);
  if (await source.exists('model.safetensors')) return openSafetensors(source, 'model.safetensors');
  throw new SafetensorsError(`${source.name}: no model.safetensors or model.safetensors.index.json: missing file`);
}

async function openSharded(source: FileSource, index: string): Promise<SafetensorsSet> {
  let json: unknown;
  try {
    json = JSON.parse(await source.readText(index));
  } catch (e) {
    if (e instanceof SyntaxError) throw new SafetensorsError(`${index}: not valid JSON (${e.message})`);
    throw e;
  }
  const map = (json as { weight_map?: unknown } | null)?.weight_map;
  if (typeof map !== 'object' || map === null || Object.values(map).some((v) => typeof v !== 'string')) {
    throw new SafetensorsError(`${index}: weight_map must map tensor names to shard files`);
  }
  const weightMap = map as Record<string, string>;
  const shards = [...new Set(Object.values(weightMap))];
  const headers = new Map<string, SafetensorsHeader>();
  for (const shard of shards) {
    if (!(await source.exists(shard))) throw new SafetensorsError(`${index}: shard ${shard} is missing from ${source.name}`);
    headers.set(shard, await readHeader(source, shard));
  }
  const tensors = new Map<string, TensorInfo>();
  for (const [name, shard] of Object.entries(weightMap)) {
    const t = headers.get(shard)!.tensors.get(name);
    if (!t) throw new SafetensorsError(`${index}: tensor ${name} is listed in shard ${shard} but absent from it`);
    tensors.set(name, t);
  }
  for (const [shard, h] of headers) {
    for (const name of h.tensors.keys()) {
      if (weightMap[name] !== shard) throw new SafetensorsError(`${shard}: tensor ${name} is not listed for this shard in ${index}`);
    }
  }
  return new SafetensorsSet(source, tensors, headers.get(shards[0]!)?.metadata ?? {});
}

// ---- conversions ----

function view<T>(Ctor: new (b: ArrayBufferLike, o: number, n: number) => T, bytes: Uint8Array, per: number): T {
  // Typed arrays need aligned offsets: copy when the slice is not aligned.
  const b = bytes.byteOffset % per === 0 ? bytes : bytes.slice();
  return new Ctor(b.buffer, b.byteOffset, b.byteLength / per);
}

/** Float tensor bytes -> f32 values. */
export function toF32(dtype: StDType, bytes: Uint8Array, what = 'tensor'): Float32Array {
  switch (dtype) {
    case 'F32':
      return view(Float32Array, bytes, 4).slice();
    case 'F16': {
      const h = view(Uint16Array, bytes, 2);
      const out = new Float32Array(h.length);
      for (let i = 0; i < h.length; i++) out[i] = f16BitsToF32(h[i]!);
      return out;
    }
    case 'BF16': {
      const h = view(Uint16Array, bytes, 2);
      const out = new Float32Array(h.length);
      const u = new Uint32Array(out.buffer);
      for (let i = 0; i < h.length; i++) u[i] = h[i]! << 16;
      return out;
    }
    default:
      throw new SafetensorsError(`${what}: dtype ${dtype} is not a float type`);
  }
}

/** Float tensor bytes -> IEEE half bits, round to nearest even. */
export function toF16Bits(dtype: StDType, bytes: Uint8Array, what = 'tensor'): Uint16Array {
  if (dtype === 'F16') return view(Uint16Array, bytes, 2).slice();
  const f = toF32(dtype, bytes, what);
  const out = new Uint16Array(f.length);
  for (let i = 0; i < f.length; i++) out[i] = f32ToF16Bits(f[i]!);
  return out;
}

export function toInts(dtype: StDType, bytes: Uint8Array, what = 'tensor'): number[] {
  switch (dtype) {
    case 'I32':
      return Array.from(view(Int32Array, bytes, 4));
    case 'U8':
      return Array.from(bytes);
    case 'I64':
      return Array.from(view(BigInt64Array, bytes, 8), (v) => {
        if (v > BigInt(Number.MAX_SAFE_INTEGER) || v < -BigInt(Number.MAX_SAFE_INTEGER)) throw new SafetensorsError(`${what}: I64 value ${v} exceeds 2^53`);
        return Number(v);
      });
    default:
      throw new SafetensorsError(`${what}: dtype ${dtype} is not an integer type`);
  }
}

// ---- writing ----

export interface TensorData {
  name: string;
  dtype: StDType;
  shape: readonly number[];
  /** Values (converted to dtype; BF16/F16 round to nearest even) or the raw little-endian bytes. */
  data: ArrayLike<number> | Uint8Array;
}

export interface WriteSafetensorsOptions {
  /** Write NaN/Inf float values (default false: a non-finite value is an error naming the tensor, so a
   *  diverged gradient or weight never reaches a file that looks valid). */
  allowNonFinite?: boolean;
}

function encode(t: TensorData, allowNonFinite: boolean): Uint8Array {
  const n = numel(t.shape);
  const bytes = n * ST_BYTES[t.dtype];
  if (t.data instanceof Uint8Array && t.dtype !== 'U8') {
    if (t.data.length !== bytes) throw new SafetensorsError(`writeSafetensors: tensor ${t.name}: ${t.data.length} bytes for shape [${t.shape}] of ${t.dtype} (${bytes})`);
    return t.data;
  }
  if (t.data.length !== n) throw new SafetensorsError(`writeSafetensors: tensor ${t.name}: ${t.data.length} values for shape [${t.shape}] (${n})`);
  if (!allowNonFinite && (t.dtype === 'F32' || t.dtype === 'F16' || t.dtype === 'BF16')) {
    let count = 0;
    let first = -1;
    for (let i = 0; i < n; i++) {
      if (!Number.isFinite(t.data[i]!)) {
        count++;
        if (first < 0) first = i;
      }
    }
    if (count > 0) {
      throw new SafetensorsError(`writeSafetensors: tensor ${t.name} [${t.shape}]: ${count} of ${n} values are NaN or Inf (first at flat index ${first}: ${t.data[first]}); refusing to write them`);
    }
  }
  const out = new Uint8Array(bytes);
  const dv = new DataView(out.buffer);
  const d = t.data;
  for (let i = 0; i < n; i++) {
    const v = d[i]!;
    switch (t.dtype) {
      case 'F32': dv.setFloat32(i * 4, v, true); break;
      case 'F16': dv.setUint16(i * 2, f32ToF16Bits(v), true); break;
      case 'BF16': dv.setUint16(i * 2, f32ToBf16Bits(v), true); break;
      case 'I32': dv.setInt32(i * 4, v, true); break;
      case 'I64': dv.setBigInt64(i * 8, BigInt(v), true); break;
      case 'U8': out[i] = v; break;
    }
  }
  return out;
}

/** A safetensors file (tensors in the given order, header padded with spaces to 8 bytes, as the Rust writer does). */
export function writeSafetensors(tensors: readonly TensorData[], metadata?: Record<string, string>, opts: WriteSafetensorsOptions = {}): Uint8Array {
  const header: Record<string, unknown> = {};
  if (metadata) header.__metadata__ = metadata;
  const blobs: Uint8Array[] = [];
  let offset = 0;
  for (const t of tensors) {
    if (t.name in header) throw new SafetensorsError(`writeSafetensors: duplicate tensor ${t.name}`);
    const b = encode(t, opts.allowNonFinite ?? false);
    header[t.name] = { dtype: t.dtype, shape: [...t.shape], data_offsets: [offset, offset + b.length] };
    blobs.push(b);
    offset += b.length;
  }
  let json = new TextEncoder().encode(JSON.stringify(header));
  const padded = Math.ceil(json.length / 8) * 8;
  if (padded !== json.length) {
    const p = new Uint8Array(padded).fill(0x20);
    p.set(json);
    json = p;
  }
  const out = new Uint8Array(8 + json.length + offset);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.length), true);
  out.set(json, 8);
  let at = 8 + json.length;
  for (const b of blobs) {
    out.set(b, at);
    at += b.length;
  }
  return out;
}

/** Every tensor of an in-memory safetensors file, decoded to f32 (floats) or numbers (ints). */
export function readSafetensorsBytes(bytes: Uint8Array, file = 'buffer'): { tensors: Map<string, { dtype: StDType; shape: number[]; values: Float32Array | number[] }>; metadata: Record<string, string> } {
  const n = headerLength(bytes, file, bytes.length);
  const h = parseHeader(bytes.subarray(8, 8 + n), file, bytes.length);
  const tensors = new Map<string, { dtype: StDType; shape: number[]; values: Float32Array | number[] }>();
  for (const t of h.tensors.values()) {
    const data = bytes.subarray(t.offset, t.offset + t.byteLength);
    const isFloat = t.dtype === 'F32' || t.dtype === 'F16' || t.dtype === 'BF16';
    tensors.set(t.name, { dtype: t.dtype, shape: t.shape, values: isFloat ? toF32(t.dtype, data, `${file}: tensor ${t.name}`) : toInts(t.dtype, data, `${file}: tensor ${t.name}`) });
  }
  return { tensors, metadata: h.metadata };
}
