// Page module for browser-matmul.test.ts: random matmuls on the browser's WebGPU; returns the products
// and what the adapter is, for the test to compare with the CPU reference.
import { Gpu } from '../../../src/gpu/gpu.ts';
import { matmul } from '../../../src/kernels/matmul.ts';
import { randn } from '../../helpers/random.ts';

export interface MatmulCase {
  M: number;
  N: number;
  K: number;
  transB: boolean;
  seed: number;
}

export interface MatmulPageResult {
  runtime: string;
  cpuDriver: string | null;
  description: string;
  outputs: number[][];
}

export default async function run(cases: MatmulCase[]): Promise<MatmulPageResult> {
  const gpu = await Gpu.create();
  const outputs: number[][] = [];
  for (const c of cases) {
    const a = gpu.upload(randn(c.M * c.K, c.seed), [c.M, c.K], 'f32', 'a');
    const b = gpu.upload(randn(c.N * c.K, c.seed + 1), c.transB ? [c.N, c.K] : [c.K, c.N], 'f32', 'b');
    outputs.push(Array.from(await gpu.readF32(matmul(gpu, a, b, { transB: c.transB }))));
  }
  const r = gpu.report;
  gpu.destroy();
  return { runtime: r.runtime, cpuDriver: r.cpuDriver, description: r.description, outputs };
}
