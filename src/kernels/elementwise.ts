// Elementwise add, mul, scale, silu and row-broadcast add (shaders/elementwise.wgsl).
import type { Gpu } from '../gpu/gpu.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { Uniforms } from '../gpu/uniforms.ts';
import { expectSize, sameDtype } from './check.ts';
import { ceilDiv, grid1d } from './grid.ts';

type Op = 'add' | 'mul' | 'scale' | 'silu' | 'add_row';

function run(gpu: Gpu, op: Op, a: Tensor, b: Tensor | null, out: Tensor, scale = 1, row = 1): Tensor {
  const dtype = sameDtype(op, a, b ?? a, out);
  expectSize(op, out, a.size);
  gpu.dispatch({
    shader: 'elementwise',
    entry: op,
    variant: { aliases: { T: dtype } },
    uniforms: new Uniforms().u32(a.size).f32(scale).u32(row).u32(0),
    bindings: [a, b, out],
    workgroups: grid1d(ceilDiv(a.size, 256)),
    label: op,
  });
  return out;
}

export function add(gpu: Gpu, a: Tensor, b: Tensor, out = gpu.tensor(a.shape, a.dtype, 'add.out')): Tensor {
  expectSize('add', b, a.size);
  return run(gpu, 'add', a, b, out);
}

export function mul(gpu: Gpu, a: Tensor, b: Tensor, out = gpu.tensor(a.shape, a.dtype, 'mul.out')): Tensor {
  expectSize('mul', b, a.size);
  return run(gpu, 'mul', a, b, out);
}

export function scale(gpu: Gpu, a: Tensor, s: number, out = gpu.tensor(a.shape, a.dtype, 'scale.out')): Tensor {
  return run(gpu, 'scale', a, null, out, s);
}

export function silu(gpu: Gpu, a: Tensor, out = gpu.tensor(a.shape, a.dtype, 'silu.out')): Tensor {
  return run(gpu, 'silu', a, null, out);
}

/** out = a + b broadcast over rows; b has the size of a's last dimension. */
export function addRow(gpu: Gpu, a: Tensor, b: Tensor, out = gpu.tensor(a.shape, a.dtype, 'add_row.out')): Tensor {
  const row = a.shape[a.shape.length - 1]!;
  expectSize('add_row', b, row);
  return run(gpu, 'add_row', a, b, out, 1, row);
}
