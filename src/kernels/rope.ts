// Rotary position embedding in place on q [T, nHeads, hd] or k [T, nKv, hd] (shaders/rope.wgsl).
import type { Gpu } from '../gpu/gpu.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { Uniforms } from '../gpu/uniforms.ts';
import type { RopeTable } from '../model/rope-table.ts';
import { expectDtype, ShapeError } from './check.ts';
import { ceilDiv, grid1d } from './grid.ts';

function run(gpu: Gpu, x: Tensor, positions: Tensor, table: RopeTable, sign: number, kernel: string): Tensor {
  expectDtype(kernel, x, 'f32', 'f16');
  expectDtype(kernel, positions, 'u32');
  if (x.shape.length !== 3) throw new ShapeError(`${kernel}: ${x.label} has shape [${x.shape}], expected [T, heads, headDim]`);
  const [tokens, heads, hd] = x.shape as [number, number, number];
  if (hd !== table.headDim) throw new ShapeError(`${kernel}: ${x.label} head dim ${hd} but the rope table is for ${table.headDim}`);
  if (positions.size !== tokens) throw new ShapeError(`${kernel}: ${positions.label} has ${positions.size} positions for ${tokens} tokens`);
  const half = hd / 2;
  gpu.dispatch({
    shader: 'rope',
    variant: { aliases: { T: x.dtype } },
    uniforms: new Uniforms().u32(tokens).u32(heads).u32(half).f32(sign),
    bindings: [x, positions, table.cos, table.sin],
    workgroups: grid1d(ceilDiv(tokens * heads * half, 256)),
    label: kernel,
  });
  return x;
}

/** Rotates x in place by the angles of `positions` (u32 [T]). The table must cover max(positions) + 1
 * (call `table.ensure(n)` first: positions are on the GPU, so the kernel cannot check them). */
export function rope(gpu: Gpu, x: Tensor, positions: Tensor, table: RopeTable): Tensor {
  return run(gpu, x, positions, table, 1, 'rope');
}

/** Backward of rope, in place on the gradient: rotation by −θ. */
export function ropeBackward(gpu: Gpu, dy: Tensor, positions: Tensor, table: RopeTable): Tensor {
  return run(gpu, dy, positions, table, -1, 'rope_backward');
}
