// y[M, N] = x·Wᵀ on tensor cores: f16 x [M, K] and W [N, K], f32 y. Numbered versions: 1
// (shaders/matmul_tc.wgsl) loads fragments straight from storage, 2 (shaders/matmul_tc_staged.wgsl)
// stages 32-deep slices in workgroup memory (K % 32 == 0). Needs the
// `subgroups` and `chromium-experimental-subgroup-matrix` features (Dawn; wgpu/Deno has no such
// extension) and an f16 x f16 -> f32 subgroup matrix config; shapes must be whole workgroup tiles.
// matmulTcPlan says whether (and how) a product can run here, so callers keep the f32 path otherwise.
import type { Gpu, SubgroupMatrixConfig } from '../gpu/gpu.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { Uniforms } from '../gpu/uniforms.ts';
import { expectDtype, expectShape, ShapeError } from './check.ts';

/** Rows and columns of y one subgroup owns (TM·SM x TN·SN); a workgroup is 2 x 2 subgroups. */
export const TC_TILES = { '32x32': [32, 32], '64x32': [64, 32] } as const;
export type TcTile = keyof typeof TC_TILES;

export type TcVersion = 1 | 2;
/** Depth of version 2's workgroup-memory slices. */
const STAGED_KT = 32;

export interface TcPlan {
  config: SubgroupMatrixConfig;
  tile: TcTile;
  /** Workgroup tile of y. */
  rows: number;
  cols: number;
  subgroupSize: number;
}

export class TensorCoreError extends Error {
  override name = 'TensorCoreError';
}

/** The config and tile for an M x N x K product, or the reason it cannot run on tensor cores here. */
export function matmulTcPlan(gpu: Gpu, M: number, N: number, K: number, tile: TcTile = '64x32', version: TcVersion = 1): TcPlan | string {
  const sg = gpu.report.subgroups;
  if (!sg) return 'no subgroups feature';
  if (sg.minSize !== sg.maxSize) return `subgroup size varies (${sg.minSize}-${sg.maxSize})`;
  const configs = gpu.report.subgroupMatrixConfigs.filter((c) => c.componentType === 'f16' && c.resultComponentType === 'f32');
  if (!configs.length) return 'no f16 x f16 -> f32 subgroup matrix config';
  const [tr, tc] = TC_TILES[tile];
  // Prefer the largest fragments that divide the subgroup tile.
  // Version 2 also needs the fragment depth to divide its workgroup-memory slice.
  const fits = (c: SubgroupMatrixConfig) => tr % c.M === 0 && tc % c.N === 0 && (version === 1 || STAGED_KT % c.K === 0);
  const config = configs.filter(fits).sort((a, b) => b.M * b.N * b.K - a.M * a.N * a.K)[0];
  if (!config) return `no config fits the ${tile} tile of version ${version} (configs: ${configs.map((c) => `${c.M}x${c.N}x${c.K}`).join(', ')})`;
  const [rows, cols] = [2 * tr, 2 * tc];
  const kStep = version === 2 ? STAGED_KT : config.K;
  if (M % rows || N % cols || K % kStep) return `${M}x${N}x${K} is not whole ${rows}x${cols} tiles with K a multiple of ${kStep}`;
  return { config, tile, rows, cols, subgroupSize: sg.maxSize };
}

/** y = x·Wᵀ through the plan (matmulTcPlan); x, W f16, y f32 [M, N]. */
export function matmulTc(gpu: Gpu, x: Tensor, w: Tensor, opts: { out?: Tensor; tile?: TcTile; version?: TcVersion; label?: string } = {}): Tensor {
  const k = 'matmul_tc';
  expectDtype(k, x, 'f16');
  expectDtype(k, w, 'f16');
  if (x.shape.length !== 2 || w.shape.length !== 2) throw new ShapeError(`${k}: x [${x.shape}] and W [${w.shape}] must be 2-D`);
  const [M, K] = x.shape as [number, number];
  const N = w.shape[0]!;
  if (w.shape[1] !== K) throw new ShapeError(`${k}: x [${x.shape}] and W [${w.shape}] differ in K`);
  const version = opts.version ?? 1;
  const plan = matmulTcPlan(gpu, M, N, K, opts.tile, version);
  if (typeof plan === 'string') throw new TensorCoreError(`${k}: cannot run ${M}x${N}x${K} here: ${plan}`);
  const y = opts.out ?? gpu.tensor([M, N], 'f32', 'matmul_tc.y');
  expectDtype(k, y, 'f32');
  expectShape(k, y, [M, N]);
  const [tr, tc] = TC_TILES[plan.tile];
  const { M: SM, N: SN, K: SK } = plan.config;
  gpu.dispatch({
    shader: version === 2 ? 'matmul_tc_staged' : 'matmul_tc',
    variant: { enables: ['f16', 'chromium_experimental_subgroup_matrix'], consts: { SM, SN, SK, TM: tr / SM, TN: tc / SN, WG: 4 * plan.subgroupSize } },
    uniforms: new Uniforms().u32(M).u32(N).u32(K).u32(0),
    bindings: [x, w, y],
    workgroups: [N / plan.cols, M / plan.rows],
    label: opts.label ?? k,
  });
  return y;
}
