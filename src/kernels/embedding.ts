// Embedding lookup and its deterministic scatter-add backward (shaders/embedding.wgsl).
import type { Gpu } from '../gpu/gpu.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { Uniforms } from '../gpu/uniforms.ts';
import { expectDtype, expectShape, ShapeError } from './check.ts';
import { ceilDiv, grid1d } from './grid.ts';

function checkIds(kernel: string, ids: Uint32Array, vocab: number): void {
  for (let i = 0; i < ids.length; i++) {
    if (ids[i]! >= vocab) throw new ShapeError(`${kernel}: id ${ids[i]} at position ${i} is outside the vocabulary of ${vocab}`);
  }
}

/** out[T, H] f32 = table[ids[t], :]. table [vocab, H] f32 or f16; ids a u32 tensor [T] or CPU ids (checked).
 * Also gathers rows of any [N, H] matrix (e.g. the last hidden row of each sequence). */
export function embedding(gpu: Gpu, table: Tensor, ids: Tensor | Uint32Array, out?: Tensor): Tensor {
  const k = 'embedding';
  if (table.shape.length !== 2) throw new ShapeError(`${k}: ${table.label} has shape [${table.shape}], expected [vocab, hidden]`);
  expectDtype(k, table, 'f32', 'f16');
  const [vocab, cols] = table.shape as [number, number];
  let idsT: Tensor;
  if (ids instanceof Uint32Array) {
    checkIds(k, ids, vocab);
    idsT = gpu.upload(ids, [ids.length], 'u32', 'embedding.ids');
  } else {
    expectDtype(k, ids, 'u32');
    idsT = ids;
  }
  const rows = idsT.size;
  const o = out ?? gpu.tensor([rows, cols], 'f32', 'embedding.out');
  expectDtype(k, o, 'f32');
  expectShape(k, o, [rows, cols]);
  gpu.dispatch({
    shader: 'embedding',
    entry: 'forward',
    variant: { aliases: { T: table.dtype } },
    uniforms: new Uniforms().u32(rows).u32(cols).u32(vocab).u32(0),
    bindings: [table, idsT, o, null, null, null, null, null],
    workgroups: grid1d(ceilDiv(rows * cols, 256)),
    label: k,
  });
  if (ids instanceof Uint32Array) idsT.release();
  return o;
}

/** Positions grouped by id: the order the backward sums them in (stable, so deterministic). */
export function segmentIds(ids: Uint32Array): { order: Uint32Array; segStart: Uint32Array; segId: Uint32Array } {
  const order = Uint32Array.from(ids.keys()).sort((a, b) => ids[a]! - ids[b]! || a - b);
  const starts: number[] = [];
  const segIds: number[] = [];
  for (let k = 0; k < order.length; k++) {
    const id = ids[order[k]!]!;
    if (k === 0 || id !== ids[order[k - 1]!]) {
      starts.push(k);
      segIds.push(id);
    }
  }
  starts.push(order.length);
  return { order, segStart: Uint32Array.from(starts), segId: Uint32Array.from(segIds) };
}

/** dTable[vocab, H] f32 += scatter of dY[T, H] f32 by ids (rows of ids absent are untouched). */
export function embeddingBackward(gpu: Gpu, dY: Tensor, ids: Uint32Array, dTable: Tensor): Tensor {
  const k = 'embedding_backward';
  expectDtype(k, dY, 'f32');
  expectDtype(k, dTable, 'f32');
  if (dTable.shape.length !== 2) throw new ShapeError(`${k}: ${dTable.label} has shape [${dTable.shape}], expected [vocab, hidden]`);
  const [vocab, cols] = dTable.shape as [number, number];
  expectShape(k, dY, [ids.length, cols]);
  checkIds(k, ids, vocab);
  if (ids.length === 0) return dTable;
  const { order, segStart, segId } = segmentIds(ids);
  const orderT = gpu.upload(order, [order.length], 'u32', 'embedding.order');
  const startT = gpu.upload(segStart, [segStart.length], 'u32', 'embedding.seg_start');
  const idT = gpu.upload(segId, [segId.length], 'u32', 'embedding.seg_id');
  gpu.dispatch({
    shader: 'embedding',
    entry: 'backward',
    variant: { aliases: { T: 'f32' } },
    uniforms: new Uniforms().u32(segId.length).u32(cols).u32(vocab).u32(0),
    bindings: [null, null, null, dY, orderT, startT, idT, dTable],
    workgroups: grid1d(ceilDiv(segId.length * cols, 256)),
    label: k,
  });
  for (const t of [orderT, startT, idT]) t.release();
  return dTable;
}
