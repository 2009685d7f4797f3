// Batched token sampling (shaders/sample.wgsl): greedy, temperature, top-p, each row with its own
// seeded stream; returns the chosen ids, their log-probabilities under softmax(logits / T), and the
// entropy of that distribution.
import type { Gpu } from '../gpu/gpu.ts';
import type { Tensor } from '../gpu/tensor.ts';
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

/** logits: f32 [rows, vocab]. */
export function sampleTokens(gpu: Gpu, logits: Tensor, rows: readonly SamplingRow[], out?: SampleOutput): SampleOutput {
  expectDtype('sample', logits, 'f32');
  const [n, vocab] = logits.shape as [number, number];
  if (logits.shape.length !== 2 || n !== rows.length) {
    throw new ShapeError(`sample: ${logits.label} has shape [${logits.shape}], expected [${rows.length}, vocab]`);
  }
  const params = gpu.upload(new Uint32Array(packSamplingRows(rows)), [Math.max(1, n) * ROW_WORDS], 'u32', 'sample.rows');
  const o = out ?? {
    tokens: gpu.tensor([n], 'u32', 'sample.tokens'),
    logprobs: gpu.tensor([n], 'f32', 'sample.logprobs'),
    entropies: gpu.tensor([n], 'f32', 'sample.entropies'),
  };
  gpu.dispatch({
    shader: 'sample',
    uniforms: new Uniforms().u32(vocab).u32(n).u32(0).u32(0),
    bindings: [logits, params, o.tokens, o.logprobs, o.entropies],
    workgroups: [Math.min(n, MAX_WORKGROUPS), Math.ceil(n / MAX_WORKGROUPS)],
    label: 'sample',
  });
  gpu.flush();
  params.release();
  return o;
}
