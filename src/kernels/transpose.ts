// 2-D transpose [R, C] -> [C, R] through 32x32 workgroup tiles (shaders/transpose.wgsl).
import type { Gpu } from '../gpu/gpu.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { u32s } from '../gpu/uniforms.ts';
import { expectDtype, expectShape, sameDtype, ShapeError } from './check.ts';
import { ceilDiv } from './grid.ts';

export function transpose(gpu: Gpu, x: Tensor, out?: Tensor): Tensor {
  if (x.shape.length !== 2) throw new ShapeError(`transpose: ${x.label} has shape [${x.shape}], expected 2-D`);
  expectDtype('transpose', x, 'f32', 'f16');
  const [R, C] = [x.shape[0]!, x.shape[1]!];
  const o = out ?? gpu.tensor([C, R], x.dtype, 'transpose.out');
  sameDtype('transpose', x, o);
  expectShape('transpose', o, [C, R]);
  gpu.dispatch({
    shader: 'transpose',
    variant: { aliases: { T: x.dtype } },
    uniforms: u32s(R, C, 0, 0),
    bindings: [x, o],
    workgroups: [ceilDiv(C, 32), ceilDiv(R, 32)],
    label: 'transpose',
  });
  return o;
}
