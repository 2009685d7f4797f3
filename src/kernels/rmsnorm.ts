// RMSNorm forward/backward over the last dimension (shaders/rmsnorm.wgsl): [T, H] rows with an [H]
// weight, or per head ([T, heads, headDim] with a [headDim] weight) for Qwen3's q_norm / k_norm.
import type { Gpu } from '../gpu/gpu.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { Uniforms } from '../gpu/uniforms.ts';
import { expectDtype, expectShape, sameDtype, ShapeError } from './check.ts';
import { ceilDiv, grid1d } from './grid.ts';

const DW_CHUNK = 256; // rows per partial sum; matches CHUNK in the shader
/** Rows this short take the one-thread-per-row entries (see the shader). */
export const ROWWISE_MAX_N = 64;

/** Entry and grid of the forward / dx pass for rows of n elements. */
function rowPass(entry: 'forward' | 'forward_add' | 'backward_dx', rows: number, n: number): { entry: string; workgroups: [number, number] } {
  return n <= ROWWISE_MAX_N ? { entry: `${entry}_rowwise`, workgroups: grid1d(ceilDiv(rows, 64)) } : { entry, workgroups: grid1d(rows) };
}

function rowsOf(kernel: string, x: Tensor, w: Tensor): { rows: number; n: number } {
  expectDtype(kernel, w, 'f32');
  if (w.shape.length !== 1) throw new ShapeError(`${kernel}: ${w.label} has shape [${w.shape}], expected 1-D`);
  const n = w.shape[0]!;
  if (x.shape[x.shape.length - 1] !== n) throw new ShapeError(`${kernel}: ${x.label} [${x.shape}] does not end in ${w.label}'s size ${n}`);
  return { rows: x.size / n, n };
}

function uniforms(rows: number, n: number, eps: number, accumulate = false): Uniforms {
  return new Uniforms().u32(rows).u32(n).f32(eps).u32(accumulate ? 1 : 0);
}

/** y = x / sqrt(mean(x²) + eps) * w; also returns rstd [rows] (saved for backward). x f32 or f16; y has x's dtype. */
export function rmsnorm(gpu: Gpu, x: Tensor, w: Tensor, eps: number, out: { y?: Tensor; rstd?: Tensor } = {}): { y: Tensor; rstd: Tensor } {
  const k = 'rmsnorm';
  expectDtype(k, x, 'f32', 'f16');
  const { rows, n } = rowsOf(k, x, w);
  const y = out.y ?? gpu.tensor(x.shape, x.dtype, 'rmsnorm.y');
  const rstd = out.rstd ?? gpu.tensor([rows], 'f32', 'rmsnorm.rstd');
  sameDtype(k, x, y);
  expectShape(k, y, x.shape);
  expectShape(k, rstd, [rows]);
  if (y.buffer === x.buffer) throw new ShapeError(`${k}: ${y.label} aliases ${x.label}`);
  gpu.dispatch({
    shader: 'rmsnorm',
    ...rowPass('forward', rows, n),
    variant: { aliases: { T: x.dtype } },
    uniforms: uniforms(rows, n, eps),
    bindings: [x, w, y, rstd, null, null, null, null],
    label: k,
  });
  return { y, rstd };
}

/** h = x + addend and y = rmsnorm(h)·w in one pass (a residual add and the norm after it); rstd as rmsnorm's. */
export function addRmsnorm(gpu: Gpu, x: Tensor, addend: Tensor, w: Tensor, eps: number): { h: Tensor; y: Tensor; rstd: Tensor } {
  const k = 'add_rmsnorm';
  expectDtype(k, x, 'f32', 'f16');
  const { rows, n } = rowsOf(k, x, w);
  sameDtype(k, x, addend);
  expectShape(k, addend, x.shape);
  const h = gpu.tensor(x.shape, x.dtype, 'add_rmsnorm.h');
  const y = gpu.tensor(x.shape, x.dtype, 'add_rmsnorm.y');
  const rstd = gpu.tensor([rows], 'f32', 'add_rmsnorm.rstd');
  gpu.dispatch({
    shader: 'rmsnorm',
    ...rowPass('forward_add', rows, n),
    variant: { aliases: { T: x.dtype } },
    uniforms: uniforms(rows, n, eps),
    bindings: [x, w, y, rstd, null, null, null, null, addend, h],
    label: k,
  });
  return { h, y, rstd };
}

export interface RmsnormGrads {
  dx: Tensor;
  /** Only when asked for (full-parameter training); frozen norm weights need none. */
  dw?: Tensor;
}

/** Backward of rmsnorm given the input x, the saved rstd and dy. With `dw` (f32 [n]) the weight
 * gradient is written there (added to it with accumulateDw); with `wantDw` a new dw is made. */
export function rmsnormBackward(
  gpu: Gpu,
  x: Tensor,
  w: Tensor,
  rstd: Tensor,
  dy: Tensor,
  opts: { dx?: Tensor; dw?: Tensor; wantDw?: boolean; accumulateDw?: boolean } = {},
): RmsnormGrads {
  const k = 'rmsnorm_backward';
  expectDtype(k, x, 'f32', 'f16');
  const { rows, n } = rowsOf(k, x, w);
  sameDtype(k, x, dy);
  expectShape(k, dy, x.shape);
  expectShape(k, rstd, [rows]);
  const dx = opts.dx ?? gpu.tensor(x.shape, x.dtype, 'rmsnorm.dx');
  sameDtype(k, x, dx);
  expectShape(k, dx, x.shape);
  const variant = { aliases: { T: x.dtype } };
  gpu.dispatch({
    shader: 'rmsnorm',
    ...rowPass('backward_dx', rows, n),
    variant,
    uniforms: uniforms(rows, n, 0),
    bindings: [x, w, null, rstd, dy, dx, null, null],
    label: `${k}.dx`,
  });
  if (!opts.dw && !opts.wantDw) return { dx };
  const dw = opts.dw ?? gpu.tensor([n], 'f32', 'rmsnorm.dw');
  expectDtype(k, dw, 'f32');
  expectShape(k, dw, [n]);
  const chunks = ceilDiv(rows, DW_CHUNK);
  const partial = gpu.tensor([chunks, n], 'f32', 'rmsnorm.dw_partial');
  gpu.dispatch({
    shader: 'rmsnorm',
    entry: 'backward_dw_partial',
    variant,
    uniforms: uniforms(rows, n, 0),
    bindings: [x, null, null, rstd, dy, null, partial, null],
    workgroups: grid1d(ceilDiv(chunks * n, 256)),
    label: `${k}.dw_partial`,
  });
  gpu.dispatch({
    shader: 'rmsnorm',
    entry: 'backward_dw_reduce',
    variant,
    uniforms: uniforms(rows, n, 0, opts.accumulateDw ?? false),
    bindings: [null, null, null, null, null, null, partial, dw],
    workgroups: [ceilDiv(n, 256)],
    label: `${k}.dw_reduce`,
  });
  partial.release();
  return { dx, dw };
}
