// Per-row multi-LoRA (shaders/lora_rows.wgsl): each row of a packed batch applies its own adapter of a
// bank, or none, in one pass: y[t] += scale[a_t]·(x[t]·A[a_t]ᵀ)·B[a_t]ᵀ. Decode batches mix roles freely
// (no sorting, no row copies); rows with NO_ADAPTER are the base model.
import type { Gpu } from '../gpu/gpu.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { Uniforms } from '../gpu/uniforms.ts';
import { expectDtype, expectShape, ShapeError } from './check.ts';
import { ceilDiv, MAX_WORKGROUPS } from './grid.ts';

/** Row adapter index meaning "no adapter" (the row keeps the base model's output). */
export const NO_ADAPTER = 0xffffffff;

// As in shaders/lora_rows.wgsl.
const EXPAND_COLS = 256;
const SHRINK_RANKS = 64;
/** Workgroups shrink aims for, and the shortest part of IN it splits off to get them. */
const SHRINK_WORKGROUPS = 1024;
const MIN_SPLIT_IN = 256;

/** Parts of IN that shrink splits into: with few rows, more workgroups (each part at least MIN_SPLIT_IN long). */
function shrinkSplits(T: number, IN: number, R: number): { splits: number; chunk: number } {
  const workgroups = T * ceilDiv(R, SHRINK_RANKS);
  const want = Math.max(1, Math.min(ceilDiv(SHRINK_WORKGROUPS, workgroups), Math.floor(IN / MIN_SPLIT_IN)));
  const chunk = ceilDiv(IN, want);
  return { splits: ceilDiv(IN, chunk), chunk };
}

/** n adapters side by side, transposed (coalesced reads). Slot a holds adapter a's Aᵀ in A[a] [in, r] (columns
 * j < rank[a]) and its Bᵀ in B[a] [r, out] (rows j < rank[a]); r: the bank's largest rank; rank[a] = 0: no such module. */
export interface LoraRowsBank {
  /** f32 (or f16 when gpu.f16) [n, in, r] */
  A: Tensor;
  /** same dtype as A, [n, r, out] */
  B: Tensor;
  /** f32 [n]: alpha / rank of each adapter */
  scale: Tensor;
  /** u32 [n]: each adapter's rank, at most r */
  rank: Tensor;
}

/** Rows folded into (y, z) of the grid: T may exceed one dimension's 65535. */
function rowGrid(x: number, T: number): [number, number, number] {
  const z = ceilDiv(T, MAX_WORKGROUPS);
  return [x, ceilDiv(T, z), z];
}

/** y [T, out] f32 += per-row LoRA delta of x [T, in]; rows u32 [T] names each row's slot (or NO_ADAPTER).
 * Slots past the bank count as none (the kernel never reads out of bounds); callers check indices. */
export function loraRows(gpu: Gpu, x: Tensor, y: Tensor, rows: Tensor, bank: LoraRowsBank, label = 'lora_rows'): void {
  if (x.shape.length !== 2) throw new ShapeError(`${label}: ${x.label} has shape [${x.shape}], expected [T, in]`);
  if (bank.A.shape.length !== 3) throw new ShapeError(`${label}: ${bank.A.label} has shape [${bank.A.shape}], expected [n, in, r]`);
  const [T, IN] = x.shape as [number, number];
  const [n, , R] = bank.A.shape as [number, number, number];
  if (bank.A.shape[1] !== IN) throw new ShapeError(`${label}: ${bank.A.label} has shape [${bank.A.shape}], expected [n, ${IN}, r] for ${x.label} [${x.shape}]`);
  if (y.shape.length !== 2 || y.shape[0] !== T) throw new ShapeError(`${label}: ${y.label} has shape [${y.shape}], expected [${T}, out]`);
  const OUT = y.shape[1]!;
  expectShape(label, bank.B, [n, R, OUT]);
  expectShape(label, bank.scale, [n]);
  expectShape(label, bank.rank, [n]);
  expectShape(label, rows, [T]);
  expectDtype(label, x, 'f32', 'f16');
  expectDtype(label, bank.A, 'f32', 'f16');
  expectDtype(label, bank.B, bank.A.dtype);
  expectDtype(label, bank.scale, 'f32');
  expectDtype(label, bank.rank, 'u32');
  expectDtype(label, rows, 'u32');
  expectDtype(label, y, 'f32');
  if ((x.dtype === 'f16' || bank.A.dtype === 'f16') && !gpu.f16) throw new ShapeError(`${label}: f16 operands need the shader-f16 feature, which this device lacks`);
  if (T < 1 || IN < 1 || OUT < 1 || R < 1 || n < 1) throw new ShapeError(`${label}: empty shape T ${T}, in ${IN}, out ${OUT}, r ${R}, adapters ${n}`);

  const { splits, chunk } = shrinkSplits(T, IN, R);
  const u = gpu.tensor([splits, T, R], 'f32', `${label}.u`);
  const variant = { aliases: { TX: x.dtype, TW: bank.A.dtype } };
  const uniforms = () => new Uniforms().u32(T).u32(IN).u32(OUT).u32(R).u32(n).u32(splits).u32(chunk).u32(0);
  gpu.dispatch({
    shader: 'lora_rows',
    entry: 'shrink',
    variant,
    uniforms: uniforms(),
    bindings: [x, bank.A, null, null, bank.rank, rows, u, null],
    workgroups: rowGrid(ceilDiv(R, SHRINK_RANKS) * splits, T),
    label: `${label}.shrink`,
  });
  gpu.dispatch({
    shader: 'lora_rows',
    entry: 'expand',
    variant,
    uniforms: uniforms(),
    bindings: [null, null, bank.B, bank.scale, bank.rank, rows, u, y],
    workgroups: rowGrid(ceilDiv(OUT, EXPAND_COLS), T),
    label: `${label}.expand`,
  });
  u.release(); // later users of the buffer are ordered after these dispatches
}
