// Batched token sampling (shaders/sample.wgsl): greedy, temperature, top-p, each row with its own
// seeded stream; returns the chosen ids, their log-probabilities under softmax(logits / T), and the
// entropy of that distribution.
import type { Gpu, PendingRead } from '../gpu/gpu.ts';
import { Tensor } from '../gpu/tensor.ts';
import { Uniforms } from '../gpu/uniforms.ts';
import { expectDtype, ShapeError } from './check.ts';
import { MAX_WORKGROUPS } from './grid.ts';

export interface SamplingRow {
  /** 0 = greedy. */
  temperature: number;
  /** 1 = no nucleus truncation. */
  topP: number;
  seed: number;
  /** Independent stream under one seed (e.g. the index of a sample among n). */
  stream: number;
  /** Index of the token being drawn within the sequence's generation. */
  step: number;
}

const ROW_WORDS = 8;

export function packSamplingRows(rows: readonly SamplingRow[]): ArrayBuffer {
  const buf = new ArrayBuffer(Math.max(1, rows.length) * ROW_WORDS * 4);
  const f = new Float32Array(buf);
  const u = new Uint32Array(buf);
  rows.forEach((r, i) => {
    if (!(r.temperature >= 0) || !Number.isFinite(r.temperature)) throw new RangeError(`sampling row ${i}: bad temperature ${r.temperature}`);
    if (!(r.topP > 0 && r.topP <= 1)) throw new RangeError(`sampling row ${i}: top_p must be in (0, 1], got ${r.topP}`);
    f[i * ROW_WORDS] = r.temperature;
    f[i * ROW_WORDS + 1] = r.topP;
    u[i * ROW_WORDS + 2] = r.seed >>> 0;
    u[i * ROW_WORDS + 3] = r.stream >>> 0;
    u[i * ROW_WORDS + 4] = r.step >>> 0;
  });
  return buf;
}

export interface SampleOutput {
  tokens: Tensor;
  logprobs: Tensor;
  entropies: Tensor;
}

type Slot = Tensor | { buffer: GPUBuffer; offset: number; size: number };

function checkLogits(logits: Tensor, rows: readonly SamplingRow[]): [number, number] {
  expectDtype('sample', logits, 'f32');
  const [n, vocab] = logits.shape as [number, number];
  if (logits.shape.length !== 2 || n !== rows.length) {
    throw new ShapeError(`sample: ${logits.label} has shape [${logits.shape}], expected [${rows.length}, vocab]`);
  }
  return [n, vocab];
}

/** Tokens a workgroup of the sampler's `chunks` entry reads (shaders/sample.wgsl: WG · PER). */
export const SAMPLE_CHUNK = 2048;

/** Rows with top_p = 1 go through `chunks` + `finish` (the row read once, by many workgroups), the others through
 * `main` (one workgroup a row): the choice is each row's own, so a row's draw does not depend on its batch. */
function dispatchSample(gpu: Gpu, logits: Tensor, rows: readonly SamplingRow[], n: number, vocab: number, tokens: Slot, logprobs: Slot, entropies: Slot): void {
  const params = gpu.upload(new Uint32Array(packSamplingRows(rows)), [Math.max(1, n) * ROW_WORDS], 'u32', 'sample.rows');
  // The shader sees top_p as f32: decide as it will (0.99999999 is 1 there).
  const full = rows.filter((r) => Math.fround(r.topP) >= 1).length;
  const chunks = Math.ceil(vocab / SAMPLE_CHUNK);
  const rowGrid = [Math.min(n, MAX_WORKGROUPS), Math.ceil(n / MAX_WORKGROUPS)] as const;
  const uniforms = (skipFull: boolean) => new Uniforms().u32(vocab).u32(n).u32(skipFull ? 1 : 0).u32(0);
  if (full > 0) {
    if (chunks > MAX_WORKGROUPS) throw new ShapeError(`sample: vocab ${vocab} needs ${chunks} chunks of ${SAMPLE_CHUNK}, over ${MAX_WORKGROUPS} workgroups`);
    const stats = gpu.tensor([n * chunks * 4], 'f32', 'sample.chunk_stats');
    gpu.dispatch({
      shader: 'sample',
      entry: 'chunks',
      uniforms: uniforms(false),
      bindings: [logits, params, null, null, null, stats],
      workgroups: [chunks, rowGrid[0], rowGrid[1]],
      label: 'sample.chunks',
    });
    gpu.dispatch({
      shader: 'sample',
      entry: 'finish',
      uniforms: uniforms(false),
      bindings: [logits, params, tokens, logprobs, entropies, stats],
      workgroups: [...rowGrid],
      label: 'sample.finish',
    });
    stats.release();
  }
  if (full < n) {
    gpu.dispatch({
      shader: 'sample',
      uniforms: uniforms(full > 0),
      bindings: [logits, params, tokens, logprobs, entropies],
      workgroups: [...rowGrid],
      label: 'sample',
    });
  }
  params.release();
}

/** logits: f32 [rows, vocab]. Submits the batch (the draws start on the GPU at once). */
export function sampleTokens(gpu: Gpu, logits: Tensor, rows: readonly SamplingRow[], out?: SampleOutput): SampleOutput {
  const [n, vocab] = checkLogits(logits, rows);
  const o = out ?? {
    tokens: gpu.tensor([n], 'u32', 'sample.tokens'),
    logprobs: gpu.tensor([n], 'f32', 'sample.logprobs'),
    entropies: gpu.tensor([n], 'f32', 'sample.entropies'),
  };
  dispatchSample(gpu, logits, rows, n, vocab, o.tokens, o.logprobs, o.entropies);
  gpu.flush();
  return o;
}

export interface PackedSample {
  /** Owns the buffer: u32 [3 · stride], tokens at 0, logprob bits at stride, entropy bits at 2 · stride. */
  packed: Tensor;
  /** Elements from one section to the next (n rounded up to the storage offset alignment). */
  stride: number;
  /** The sampled ids, u32 [n]: a view of packed (do not release it), usable as the next forward's ids. */
  tokens: Tensor;
}

/** Like sampleTokens, but the three results share one buffer (one copy and one map to read them back, see
 * readPackedSample) and nothing is submitted: the caller's read submits the whole step at once. */
export function sampleTokensPacked(gpu: Gpu, logits: Tensor, rows: readonly SamplingRow[]): PackedSample {
  const [n, vocab] = checkLogits(logits, rows);
  const align = gpu.limits.minStorageBufferOffsetAlignment;
  const stride = Math.ceil((Math.max(1, n) * 4) / align) * (align / 4);
  const packed = gpu.tensor([3 * stride], 'u32', 'sample.packed');
  const slot = (k: number) => ({ buffer: packed.buffer, offset: k * stride * 4, size: Math.max(1, n) * 4 });
  dispatchSample(gpu, logits, rows, n, vocab, slot(0), slot(1), slot(2));
  return { packed, stride, tokens: new Tensor(gpu, packed.buffer, [n], 'u32', 'sample.tokens') };
}

export interface SampleValues {
  tokens: Uint32Array;
  logprobs: Float32Array;
  entropies: Float32Array;
}

/** Reads a packed sample back in one map: ids, log-probabilities, entropies of its n rows. */
export async function readPackedSample(gpu: Gpu, s: PackedSample): Promise<SampleValues> {
  const { read, values } = readPackedSampleLater(gpu, s);
  read.start();
  return values;
}

/** Submits the copy of a packed sample into a map buffer; its values come once read.start() has run. */
export function readPackedSampleLater(gpu: Gpu, s: PackedSample): { read: PendingRead; values: Promise<SampleValues> } {
  const n = s.tokens.size;
  const read = gpu.readBytesLater(s.packed.buffer, 0, (2 * s.stride + Math.max(1, n)) * 4, s.packed.label);
  const values = read.bytes.then((raw) => ({
    tokens: new Uint32Array(raw, 0, n),
    logprobs: new Float32Array(raw, s.stride * 4, n),
    entropies: new Float32Array(raw, 2 * s.stride * 4, n),
  }));
  // Awaited later (a step recorded ahead is read after the one before it): no unhandled rejection meanwhile.
  values.catch(() => {});
  return { read, values };
}
