// Per-row multi-LoRA (shaders/lora_rows.wgsl): each row of a packed batch applies its own adapter of a
// bank, or none: y[t] += scale[a_t]·(x[t]·A[a_t]ᵀ)·B[a_t]ᵀ. Decode batches mix roles freely: the host groups a
// batch's rows into tiles of up to 16 rows of one adapter once (loraRowTiles; no row copies), so each adapter weight
// the kernel reads serves a tile; rows with NO_ADAPTER are the base model.
import type { Gpu } from '../gpu/gpu.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { Uniforms } from '../gpu/uniforms.ts';
import { expectDtype, expectShape, ShapeError } from './check.ts';
import { ceilDiv, MAX_WORKGROUPS } from './grid.ts';

/** Row adapter index meaning "no adapter" (the row keeps the base model's output). */
export const NO_ADAPTER = 0xffffffff;

// As in shaders/lora_rows.wgsl.
const EXPAND_COLS = 64;
const SHRINK_RANKS = 64;
const SHRINK_K = 64;
const TILE_ROWS = 16;
const TILE_STRIDE = 2 + TILE_ROWS;
/** Workgroups shrink aims for: with few tiles it splits IN into parts (each a multiple of SHRINK_K). */
const SHRINK_WORKGROUPS = 512;

/** Parts of IN that shrink splits into so that few tiles still fill the GPU. */
function shrinkSplits(tiles: number, IN: number, R: number): { splits: number; chunk: number } {
  const workgroups = tiles * ceilDiv(R, SHRINK_RANKS);
  const want = Math.max(1, Math.min(ceilDiv(SHRINK_WORKGROUPS, workgroups), Math.floor(IN / SHRINK_K)));
  const chunk = ceilDiv(ceilDiv(IN, want), SHRINK_K) * SHRINK_K;
  return { splits: ceilDiv(IN, chunk), chunk };
}

/** A batch's rows grouped into tiles of up to 16 rows of one adapter, uploaded once per batch and used by every
 * lora_rows call over it. */
export interface LoraRowTiles {
  /** u32 [max(1, count) · 18]: per tile its slot, its row count, then its row indices */
  tiles: Tensor;
  /** tiles in the batch (0: no row has an adapter) */
  count: number;
  /** rows of the batch */
  T: number;
}

/** A batch's rows grouped by adapter slot: the tiles and the bank's backward both start from it. */
export interface RowsBySlot {
  /** slot -> its rows in batch order; slots in order of first appearance */
  slots: Map<number, Uint32Array>;
  /** rows of the batch */
  T: number;
}

/** Groups rows by slot: rows[t] is row t's slot (NO_ADAPTER, or a slot past the n of the bank: none). */
export function rowsBySlot(rows: Uint32Array, n: number): RowsBySlot {
  const lists = new Map<number, number[]>();
  rows.forEach((slot, t) => {
    if (slot === NO_ADAPTER || slot >= n) return;
    let list = lists.get(slot);
    if (!list) lists.set(slot, (list = []));
    list.push(t);
  });
  return { slots: new Map([...lists].map(([slot, list]) => [slot, Uint32Array.from(list)])), T: rows.length };
}

/** Tiles of the rows of a batch, each slot's rows in their order. */
export function loraRowTiles(gpu: Gpu, grouped: RowsBySlot, label = 'lora_rows.tiles'): LoraRowTiles {
  const words: number[] = [];
  for (const [slot, list] of grouped.slots) {
    for (let i = 0; i < list.length; i += TILE_ROWS) {
      const part = list.subarray(i, i + TILE_ROWS);
      words.push(slot, part.length, ...part, ...new Array<number>(TILE_ROWS - part.length).fill(NO_ADAPTER));
    }
  }
  const count = words.length / TILE_STRIDE;
  if (!count) words.push(...new Array<number>(TILE_STRIDE).fill(0));
  return { tiles: gpu.upload(Uint32Array.from(words), [words.length], 'u32', label), count, T: grouped.T };
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

/** Tiles folded into (y, z) of the grid: a batch may hold more than one dimension's 65535. */
function tileGrid(x: number, tiles: number): [number, number, number] {
  const z = ceilDiv(tiles, MAX_WORKGROUPS);
  return [x, ceilDiv(tiles, z), z];
}

/** y [T, out] f32 += per-row LoRA delta of x [T, in]; `rows` (loraRowTiles of the batch) names each row's slot.
 * Slots past the bank count as none (the kernel never reads out of bounds); callers check indices. */
export function loraRows(gpu: Gpu, x: Tensor, y: Tensor, rows: LoraRowTiles, bank: LoraRowsBank, label = 'lora_rows'): void {
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
  if (rows.T !== T) throw new ShapeError(`${label}: ${rows.tiles.label} tiles a batch of ${rows.T} rows, ${x.label} has ${T}`);
  expectShape(label, rows.tiles, [Math.max(1, rows.count) * TILE_STRIDE]);
  expectDtype(label, x, 'f32', 'f16');
  expectDtype(label, bank.A, 'f32', 'f16');
  expectDtype(label, bank.B, bank.A.dtype);
  expectDtype(label, bank.scale, 'f32');
  expectDtype(label, bank.rank, 'u32');
  expectDtype(label, rows.tiles, 'u32');
  expectDtype(label, y, 'f32');
  if ((x.dtype === 'f16' || bank.A.dtype === 'f16') && !gpu.f16) throw new ShapeError(`${label}: f16 operands need the shader-f16 feature, which this device lacks`);
  if (T < 1 || IN < 1 || OUT < 1 || R < 1 || n < 1) throw new ShapeError(`${label}: empty shape T ${T}, in ${IN}, out ${OUT}, r ${R}, adapters ${n}`);

  if (!rows.count) return;

  const { splits, chunk } = shrinkSplits(rows.count, IN, R);
  const u = gpu.tensor([splits, T, R], 'f32', `${label}.u`);
  const variant = { aliases: { TX: x.dtype, TW: bank.A.dtype } };
  const uniforms = () => new Uniforms().u32(T).u32(IN).u32(OUT).u32(R).u32(n).u32(splits).u32(chunk).u32(rows.count);
  gpu.dispatch({
    shader: 'lora_rows',
    entry: 'shrink',
    variant,
    uniforms: uniforms(),
    bindings: [x, bank.A, null, null, bank.rank, rows.tiles, u, null],
    workgroups: tileGrid(ceilDiv(R, SHRINK_RANKS) * splits, rows.count),
    label: `${label}.shrink`,
  });
  gpu.dispatch({
    shader: 'lora_rows',
    entry: 'expand',
    variant,
    uniforms: uniforms(),
    bindings: [null, null, bank.B, bank.scale, bank.rank, rows.tiles, u, y],
    workgroups: tileGrid(ceilDiv(OUT, EXPAND_COLS), rows.count),
    label: `${label}.expand`,
  });
  u.release(); // later users of the buffer are ordered after these dispatches
}
