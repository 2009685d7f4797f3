// Row reductions over the last dimension (shaders/reduce.wgsl): x [..., n] -> out [rows] f32.
import type { Gpu } from '../gpu/gpu.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { u32s } from '../gpu/uniforms.ts';
import { expectDtype, expectShape, ShapeError } from './check.ts';
import { grid1d } from './grid.ts';

export type ReduceOp = 'sum' | 'max' | 'sumsq';

/** Rows and row length of a tensor seen as [rows, last dim]. */
export function rowsOf(kernel: string, x: Tensor): { rows: number; n: number } {
  const n = x.shape[x.shape.length - 1];
  if (n === undefined || n < 1) throw new ShapeError(`${kernel}: ${x.label} has shape [${x.shape}], expected a non-empty last dimension`);
  return { rows: x.size / n, n };
}

export function reduceRows(gpu: Gpu, x: Tensor, op: ReduceOp, out?: Tensor): Tensor {
  const kernel = `reduce_${op}`;
  expectDtype(kernel, x, 'f32', 'f16');
  const { rows, n } = rowsOf(kernel, x);
  const o = out ?? gpu.tensor([rows], 'f32', `${kernel}.out`);
  expectDtype(kernel, o, 'f32');
  expectShape(kernel, o, [rows]);
  gpu.dispatch({
    shader: 'reduce',
    entry: `row_${op}`,
    variant: { aliases: { T: x.dtype } },
    uniforms: u32s(rows, n, 0, 0),
    bindings: [x, o],
    workgroups: grid1d(rows),
    label: kernel,
  });
  return o;
}
