// Qwen3's q/k norm and rotary embedding fused, in place (shaders/qk_norm_rope.wgsl): inference only.
import type { Gpu } from '../gpu/gpu.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { Uniforms } from '../gpu/uniforms.ts';
import type { RopeTable } from '../model/rope-table.ts';
import { expectDtype, expectShape, sameDtype, ShapeError } from './check.ts';
import { ceilDiv, grid1d } from './grid.ts';

const ROWS_PER_WORKGROUP = 4;

/** q [T, nHeads, hd] ← rope(q_norm(q)) and k [T, nKv, hd] ← rope(k_norm(k)), with norm weights qw, kw (f32 [hd]).
 * The table must cover max(positions) + 1 (`table.ensure`: positions are on the GPU, the kernel cannot check them). */
export function qkNormRope(gpu: Gpu, q: Tensor, k: Tensor, qw: Tensor, kw: Tensor, positions: Tensor, table: RopeTable, eps: number): void {
  const name = 'qk_norm_rope';
  expectDtype(name, q, 'f32', 'f16');
  sameDtype(name, q, k);
  expectDtype(name, positions, 'u32');
  if (q.shape.length !== 3 || k.shape.length !== 3) throw new ShapeError(`${name}: ${q.label} [${q.shape}] and ${k.label} [${k.shape}] must be [T, heads, headDim]`);
  const [tokens, nHeads, hd] = q.shape as [number, number, number];
  const nKv = k.shape[1]!;
  expectShape(name, k, [tokens, nKv, hd]);
  expectShape(name, qw, [hd]);
  expectShape(name, kw, [hd]);
  expectDtype(name, qw, 'f32');
  expectDtype(name, kw, 'f32');
  if (hd !== table.headDim) throw new ShapeError(`${name}: head dim ${hd} but the rope table is for ${table.headDim}`);
  if (positions.size !== tokens) throw new ShapeError(`${name}: ${positions.label} has ${positions.size} positions for ${tokens} tokens`);
  if (q.buffer === k.buffer) throw new ShapeError(`${name}: ${q.label} aliases ${k.label}`);
  gpu.dispatch({
    shader: 'qk_norm_rope',
    variant: { aliases: { T: q.dtype } },
    uniforms: new Uniforms().u32(tokens).u32(nHeads).u32(nKv).u32(hd / 2).f32(eps).u32(0).u32(0).u32(0),
    bindings: [q, k, qw, kw, positions, table.cos, table.sin],
    workgroups: grid1d(ceilDiv(tokens * (nHeads + nKv), ROWS_PER_WORKGROUP)),
    label: name,
  });
}
