// Shape and dtype checks for kernel wrappers: a wrong call fails here, naming the kernel and tensor.
import type { DType } from '../gpu/dtype.ts';
import type { Tensor } from '../gpu/tensor.ts';

export class ShapeError extends Error {
  override name = 'ShapeError';
}

export function expectShape(kernel: string, t: Tensor, shape: readonly number[]): void {
  if (t.shape.length !== shape.length || t.shape.some((d, i) => d !== shape[i])) {
    throw new ShapeError(`${kernel}: ${t.label} has shape [${t.shape}], expected [${shape}]`);
  }
}

export function expectSize(kernel: string, t: Tensor, size: number): void {
  if (t.size !== size) throw new ShapeError(`${kernel}: ${t.label} has ${t.size} elements, expected ${size}`);
}

export function expectDtype(kernel: string, t: Tensor, ...dtypes: DType[]): void {
  if (!dtypes.includes(t.dtype)) throw new ShapeError(`${kernel}: ${t.label} is ${t.dtype}, expected ${dtypes.join(' or ')}`);
}

export function sameDtype(kernel: string, ...ts: Tensor[]): DType {
  const d = ts[0]!.dtype;
  for (const t of ts) if (t.dtype !== d) throw new ShapeError(`${kernel}: ${t.label} is ${t.dtype}, ${ts[0]!.label} is ${d}`);
  return d;
}
