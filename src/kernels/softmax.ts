// Row softmax over the last dimension and its backward (shaders/softmax.wgsl). Same shape and dtype in
// and out (f32, or f16 storage with f32 math).
import type { Gpu } from '../gpu/gpu.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { u32s } from '../gpu/uniforms.ts';
import { expectDtype, expectShape, sameDtype } from './check.ts';
import { grid1d } from './grid.ts';
import { rowsOf } from './reduce.ts';

/** y = softmax(x) along the last dimension. */
export function softmax(gpu: Gpu, x: Tensor, out = gpu.tensor(x.shape, x.dtype, 'softmax.out')): Tensor {
  expectDtype('softmax', x, 'f32', 'f16');
  sameDtype('softmax', x, out);
  expectShape('softmax', out, x.shape);
  const { rows, n } = rowsOf('softmax', x);
  gpu.dispatch({
    shader: 'softmax',
    entry: 'forward',
    variant: { aliases: { T: x.dtype } },
    uniforms: u32s(rows, n, 0, 0),
    bindings: [x, null, out],
    workgroups: grid1d(rows),
    label: 'softmax',
  });
  return out;
}

/** dx = y ⊙ (dy − Σ dy·y) along the last dimension, from the forward's output y. */
export function softmaxBackward(gpu: Gpu, y: Tensor, dy: Tensor, out = gpu.tensor(y.shape, y.dtype, 'softmax_backward.dx')): Tensor {
  expectDtype('softmax_backward', y, 'f32', 'f16');
  sameDtype('softmax_backward', y, dy, out);
  expectShape('softmax_backward', dy, y.shape);
  expectShape('softmax_backward', out, y.shape);
  const { rows, n } = rowsOf('softmax_backward', y);
  gpu.dispatch({
    shader: 'softmax',
    entry: 'backward',
    variant: { aliases: { T: y.dtype } },
    uniforms: u32s(rows, n, 0, 0),
    bindings: [y, dy, out],
    workgroups: grid1d(rows),
    label: 'softmax_backward',
  });
  return out;
}
