// 2-D transpose [R, C] -> [C, R] through 32x32 workgroup tiles (shaders/transpose.wgsl).
import type { Gpu } from '../gpu/gpu.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { u32s } from '../gpu/uniforms.ts';
import { expectDtype, expectShape, sameDtype, ShapeError } from './check.ts';
import { ceilDiv } from './grid.ts';

export function transpose(gpu: Gpu, x: Tensor, out?: Tensor): Tensor {
  if (x.shape.length !== 2) throw new ShapeError(`transpose: ${x.label} has shape [${x.shape}], expected 2-D`);
  const [R, C] = [x.shape[0]!, x.shape[1]!];
  const o = out ?? gpu.tensor([C, R], x.dtype, 'transpose.out');
  expectShape('transpose', o, [C, R]);
  transposeInto(gpu, x, o, R, 0);
  return o;
}

/** xᵀ written as a block of a larger matrix: out[base + c·ld + r] = x[r, c] for x [R, C] (ld >= R). */
export function transposeInto(gpu: Gpu, x: Tensor, out: Tensor, ld: number, base: number): void {
  if (x.shape.length !== 2) throw new ShapeError(`transpose: ${x.label} has shape [${x.shape}], expected 2-D`);
  expectDtype('transpose', x, 'f32', 'f16');
  sameDtype('transpose', x, out);
  const [R, C] = [x.shape[0]!, x.shape[1]!];
  if (ld < R) throw new ShapeError(`transpose: leading dimension ${ld} is less than ${x.label}'s ${R} rows`);
  if (C > 0 && base + (C - 1) * ld + R > out.size) throw new ShapeError(`transpose: ${x.label}ᵀ at ${base} with stride ${ld} overflows ${out.label} (${out.size} elements)`);
  gpu.dispatch({
    shader: 'transpose',
    variant: { aliases: { T: x.dtype } },
    uniforms: u32s(R, C, ld, base),
    bindings: [x, out],
    workgroups: [ceilDiv(C, 32), ceilDiv(R, 32)],
    label: 'transpose',
  });
}
