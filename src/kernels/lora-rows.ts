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
const TILE_ROWS = 8;
const EXPAND_COLS = 256;
const SHRINK_RANKS = 64;
/** Workgroups shrink aims for, and the shortest part of IN it splits off to get them. */
const SHRINK_WORKGROUPS = 512;
const MIN_SPLIT_IN = 128;

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

/** Each row's adapter slot (u32 [T], NO_ADAPTER: none) and the rows in the order the kernels take them (u32 [T],
 * a permutation; rowOrder sorts it by slot so that the rows of a tile share their adapter's weights). */
export interface RowSlots {
  slot: Tensor;
  order: Tensor;
}

/** The rows sorted by slot (stable; NO_ADAPTER last): the `order` of RowSlots. */
export function rowOrder(slots: Uint32Array): Uint32Array {
  return Uint32Array.from(slots.keys()).sort((a, b) => slots[a]! - slots[b]! || a - b);
}

/** Row tiles folded into (y, z) of the grid: there may be more than one dimension's 65535. */
function tileGrid(x: number, T: number): [number, number, number] {
  const tiles = ceilDiv(T, TILE_ROWS);
  const z = ceilDiv(tiles, MAX_WORKGROUPS);
  return [x, ceilDiv(tiles, z), z];
}

/** Parts of IN that shrink splits into: enough workgroups for a large GPU when the batch has few rows, each part
 * at least MIN_SPLIT_IN long. */
function shrinkSplits(T: number, IN: number, R: number): { splits: number; chunk: number } {
  const workgroups = ceilDiv(T, TILE_ROWS) * ceilDiv(R, SHRINK_RANKS);
  const splits = Math.max(1, Math.min(ceilDiv(SHRINK_WORKGROUPS, workgroups), Math.floor(IN / MIN_SPLIT_IN)));
  const chunk = ceilDiv(IN, splits);
  return { splits: ceilDiv(IN, chunk), chunk };
}

/** y [T, out] f32 += per-row LoRA delta of x [T, in], row t with adapter slot rows.slot[t] (or none).
 * Slots past the bank count as none (the kernel never reads out of bounds); callers check indices. */
export function loraRows(gpu: Gpu, x: Tensor, y: Tensor, rows: RowSlots, bank: LoraRowsBank, label = 'lora_rows'): void {
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
  expectShape(label, rows.slot, [T]);
  expectShape(label, rows.order, [T]);
  expectDtype(label, x, 'f32', 'f16');
  expectDtype(label, bank.A, 'f32', 'f16');
  expectDtype(label, bank.B, bank.A.dtype);
  expectDtype(label, bank.scale, 'f32');
  expectDtype(label, bank.rank, 'u32');
  expectDtype(label, rows.slot, 'u32');
  expectDtype(label, rows.order, 'u32');
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
    bindings: [x, bank.A, null, null, bank.rank, rows.slot, u, null, rows.order],
    workgroups: tileGrid(ceilDiv(R, SHRINK_RANKS) * splits, T),
    label: `${label}.shrink`,
  });
  gpu.dispatch({
    shader: 'lora_rows',
    entry: 'expand',
    variant,
    uniforms: uniforms(),
    bindings: [null, null, bank.B, bank.scale, bank.rank, rows.slot, u, y, rows.order],
    workgroups: tileGrid(ceilDiv(OUT, EXPAND_COLS), T),
    label: `${label}.expand`,
  });
  u.release(); // later users of the buffer are ordered after these dispatches
}
