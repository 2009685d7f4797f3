// Element type conversions on the GPU (shaders/cast.wgsl), exact on bit patterns; none needs shader-f16
// (f16 data are moved as u32 words), so f16 tensors can be produced for a device that has the feature
// from anywhere. bf16 arrives as raw bits: a u32 tensor of ceil(n/2) words, two little-endian bf16 each.
import type { DType } from '../gpu/dtype.ts';
import type { Gpu } from '../gpu/gpu.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { u32s } from '../gpu/uniforms.ts';
import { expectDtype, expectSize, ShapeError } from './check.ts';
import { ceilDiv, grid1d } from './grid.ts';

type FloatType = 'f32' | 'f16';

function run(gpu: Gpu, entry: string, src: Tensor, n: number, out: Tensor): Tensor {
  gpu.dispatch({
    shader: 'cast',
    entry,
    uniforms: u32s(n, 0, 0, 0),
    bindings: [src, out],
    workgroups: grid1d(ceilDiv(ceilDiv(n, 2), 256)),
    label: `cast_${entry}`,
  });
  return out;
}

function outTensor(gpu: Gpu, kernel: string, shape: readonly number[], to: DType, out: Tensor | undefined): Tensor {
  const o = out ?? gpu.tensor(shape, to, `${kernel}.out`);
  expectDtype(kernel, o, to);
  expectSize(kernel, o, shape.reduce((a, b) => a * b, 1));
  return o;
}

/** bf16 bits (u32 words, two per word) -> f32 or f16 tensor of n elements, shaped `shape` (default [n]). */
export function castBf16(gpu: Gpu, bits: Tensor, n: number, to: FloatType, out?: Tensor, shape: readonly number[] = [n]): Tensor {
  const kernel = `cast_bf16_to_${to}`;
  expectDtype(kernel, bits, 'u32');
  if (!Number.isInteger(n) || n < 1) throw new ShapeError(`${kernel}: bad element count ${n}`);
  if (bits.size < ceilDiv(n, 2)) throw new ShapeError(`${kernel}: ${bits.label} has ${bits.size} words, ${n} bf16 values need ${ceilDiv(n, 2)}`);
  const o = outTensor(gpu, kernel, shape, to, out);
  if (o.size !== n) throw new ShapeError(`${kernel}: shape [${shape}] does not hold ${n} elements`);
  return run(gpu, `bf16_to_${to}`, bits, n, o);
}

/** f32 -> f16 (round to nearest even) or f16 -> f32 (exact); same shape. */
export function cast(gpu: Gpu, x: Tensor, to: FloatType, out?: Tensor): Tensor {
  const kernel = `cast_to_${to}`;
  expectDtype(kernel, x, to === 'f16' ? 'f32' : 'f16');
  const o = outTensor(gpu, kernel, x.shape, to, out);
  if (x.size === 0) return o;
  return run(gpu, to === 'f16' ? 'f32_to_f16' : 'f16_to_f32', x, x.size, o);
}
