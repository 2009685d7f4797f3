// Qwen3's q/k norm and rotary embedding fused, in place or with k and v into the KV cache
// (shaders/qk_norm_rope.wgsl): inference only.
import type { Gpu } from '../gpu/gpu.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { Uniforms } from '../gpu/uniforms.ts';
import type { RopeTable } from '../model/rope-table.ts';
import { expectDtype, expectShape, sameDtype, ShapeError } from './check.ts';
import { ceilDiv, grid1d } from './grid.ts';

const ROWS_PER_WORKGROUP = 4;

/** Where `qkNormRope` puts k and v instead (kv_write.wgsl's job in the same pass): the layer's cache buffers
 * [slots, nKv, hd] (f32 or f16 storage) and each token's slot (u32 [T]). */
export interface KvDestination {
  v: Tensor;
  slots: Tensor;
  kc: Tensor;
  vc: Tensor;
}

/** Storage buffers the `to_cache` entry binds: devices with fewer per shader stage run kv_write separately. */
const TO_CACHE_STORAGE_BUFFERS = 11;

/** Whether qkNormRope can take a KvDestination on this device. */
export function qkNormRopeWritesCache(gpu: Gpu): boolean {
  return gpu.limits.maxStorageBuffersPerShaderStage >= TO_CACHE_STORAGE_BUFFERS;
}

/** q [T, nHeads, hd] ← rope(q_norm(q)) and k [T, nKv, hd] ← rope(k_norm(k)), with norm weights qw, kw (f32 [hd]).
 * With `cache`, k's result and v [T, nKv, hd] go to their cache slots instead (k is left as it was).
 * The table must cover max(positions) + 1 (`table.ensure`: positions are on the GPU, the kernel cannot check them). */
export function qkNormRope(gpu: Gpu, q: Tensor, k: Tensor, qw: Tensor, kw: Tensor, positions: Tensor, table: RopeTable, eps: number, cache?: KvDestination): void {
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
  const uniforms = new Uniforms().u32(tokens).u32(nHeads).u32(nKv).u32(hd / 2).f32(eps).u32(0).u32(0).u32(0);
  if (!cache) {
    gpu.dispatch({
      shader: 'qk_norm_rope',
      variant: { aliases: { T: q.dtype, CT: q.dtype } },
      uniforms,
      bindings: [q, k, qw, kw, positions, table.cos, table.sin],
      workgroups: grid1d(ceilDiv(tokens * (nHeads + nKv), ROWS_PER_WORKGROUP)),
      label: name,
    });
    return;
  }
  if (!qkNormRopeWritesCache(gpu)) {
    throw new ShapeError(`${name}: writing the cache binds ${TO_CACHE_STORAGE_BUFFERS} storage buffers, the device allows ${gpu.limits.maxStorageBuffersPerShaderStage}`);
  }
  expectShape(name, cache.v, [tokens, nKv, hd]);
  sameDtype(name, q, cache.v);
  expectDtype(name, cache.slots, 'u32');
  if (cache.slots.size !== tokens) throw new ShapeError(`${name}: ${cache.slots.label} has ${cache.slots.size} slots for ${tokens} tokens`);
  expectDtype(name, cache.kc, 'f32', 'f16');
  sameDtype(name, cache.kc, cache.vc);
  const row = nKv * hd;
  for (const c of [cache.kc, cache.vc]) {
    if (c.size % row) throw new ShapeError(`${name}: ${c.label} has ${c.size} elements, not whole rows of ${nKv} x ${hd}`);
  }
  gpu.dispatch({
    shader: 'qk_norm_rope',
    entry: 'to_cache',
    variant: { aliases: { T: q.dtype, CT: cache.kc.dtype } },
    uniforms,
    bindings: [q, k, qw, kw, positions, table.cos, table.sin, cache.v, cache.slots, cache.kc, cache.vc],
    workgroups: grid1d(ceilDiv(tokens * (nHeads + 2 * nKv), ROWS_PER_WORKGROUP)),
    label: `${name}.to_cache`,
  });
}
