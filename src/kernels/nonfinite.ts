// Non-finite values (NaN, ±Inf) in f32/f16 tensors, counted on the GPU (shaders/nonfinite.wgsl): a cheap
// pass over weights at load time, so a corrupt checkpoint or adapter fails there, naming the tensor,
// instead of turning every logit into NaN. Many tensors share one result buffer and one read.
import type { Gpu } from '../gpu/gpu.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { u32s } from '../gpu/uniforms.ts';
import { expectDtype, ShapeError } from './check.ts';

/** At most this many workgroups per tensor (grid-stride loop inside). */
const MAX_WORKGROUPS = 1024;

export class NonFiniteError extends Error {
  override name = 'NonFiniteError';
}

/** A result buffer for `slots` counts: u32 [2·slots], each slot [count = 0, first index = 0xffffffff]. */
export function nonFiniteCounts(gpu: Gpu, slots: number, label = 'nonfinite.out'): Tensor {
  if (!Number.isInteger(slots) || slots < 1) throw new ShapeError(`count_nonfinite: slots must be a positive integer, got ${slots}`);
  const init = new Uint32Array(2 * slots);
  for (let i = 1; i < init.length; i += 2) init[i] = 0xffffffff;
  return gpu.upload(init, [2 * slots], 'u32', label);
}

/** Adds the count of non-finite elements of `x` (f32 or f16) to `out` slot `slot` (and its first index). */
export function countNonFinite(gpu: Gpu, x: Tensor, out: Tensor, slot = 0): void {
  const kernel = 'count_nonfinite';
  expectDtype(kernel, x, 'f32', 'f16');
  expectDtype(kernel, out, 'u32');
  if (!Number.isInteger(slot) || slot < 0 || 2 * slot + 1 >= out.size) throw new ShapeError(`${kernel}: slot ${slot} outside ${out.label} (${out.size / 2} slots)`);
  if (x.size === 0) return;
  const words = x.dtype === 'f16' ? Math.ceil(x.size / 2) : x.size;
  gpu.dispatch({
    shader: 'nonfinite',
    entry: kernel,
    uniforms: u32s(x.size, x.dtype === 'f16' ? 1 : 0, slot, 0),
    bindings: [x, out],
    workgroups: [Math.min(MAX_WORKGROUPS, Math.ceil(words / 256))],
    label: kernel,
  });
}

export interface NonFiniteReport {
  name: string;
  count: number;
  /** Flat index of the first non-finite element. */
  first: number;
  size: number;
}

/** Counts non-finite elements in every tensor (one read); the tensors that have any. */
export async function findNonFinite(gpu: Gpu, tensors: readonly { name: string; tensor: Tensor }[]): Promise<NonFiniteReport[]> {
  if (!tensors.length) return [];
  const out = nonFiniteCounts(gpu, tensors.length);
  try {
    tensors.forEach((t, i) => countNonFinite(gpu, t.tensor, out, i));
    const r = (await gpu.read(out)) as Uint32Array;
    const bad: NonFiniteReport[] = [];
    tensors.forEach((t, i) => {
      if (r[2 * i]! > 0) bad.push({ name: t.name, count: r[2 * i]!, first: r[2 * i + 1]!, size: t.tensor.size });
    });
    return bad;
  } finally {
    out.release();
  }
}

/** "name [shape]: 3 of 1024 elements are NaN/Inf (first at index 17)" */
export function describeNonFinite(r: NonFiniteReport, shape?: readonly number[]): string {
  return `${r.name}${shape ? ` [${shape.join(', ')}]` : ''}: ${r.count} of ${r.size} elements are NaN or Inf (first at flat index ${r.first})`;
}

/** Throws NonFiniteError naming `where` and the first offending tensors when any tensor holds NaN/Inf. */
export async function assertFinite(gpu: Gpu, where: string, tensors: readonly { name: string; tensor: Tensor }[]): Promise<void> {
  const bad = await findNonFinite(gpu, tensors);
  if (!bad.length) return;
  const shapes = new Map(tensors.map((t) => [t.name, t.tensor.shape]));
  const list = bad.slice(0, 3).map((b) => describeNonFinite(b, shapes.get(b.name))).join('; ');
  throw new NonFiniteError(`${where}: ${bad.length} tensor${bad.length > 1 ? 's hold' : ' holds'} non-finite values: ${list}${bad.length > 3 ? `; and ${bad.length - 3} more` : ''}`);
}
