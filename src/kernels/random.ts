// Fills a tensor with seeded normal values on the GPU (shaders/random_normal.wgsl).
import type { Gpu } from '../gpu/gpu.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { Uniforms } from '../gpu/uniforms.ts';
import { expectDtype } from './check.ts';
import { ceilDiv, grid1d } from './grid.ts';

/** t[i] = mean + std * N(0, 1), deterministic in (seed, i). */
export function randomNormal(gpu: Gpu, t: Tensor, seed: number, mean = 0, std = 1): Tensor {
  expectDtype('random_normal', t, 'f32', 'f16');
  gpu.dispatch({
    shader: 'random_normal',
    variant: { aliases: { T: t.dtype } },
    uniforms: new Uniforms().u32(t.size).u32(seed >>> 0).f32(mean).f32(std),
    bindings: [t],
    workgroups: grid1d(ceilDiv(t.size, 256)),
    label: `random_normal ${t.label}`,
  });
  return t;
}
