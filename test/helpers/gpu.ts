// One Gpu per test file (per runtime), created on first use.
import { Gpu, type GpuOptions } from '../../src/gpu/gpu.ts';

const cache = new Map<string, Promise<Gpu>>();

export function testGpu(options: GpuOptions = {}): Promise<Gpu> {
  const key = JSON.stringify(options);
  let g = cache.get(key);
  if (!g) cache.set(key, (g = Gpu.create(options)));
  return g;
}
