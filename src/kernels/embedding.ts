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

/** The scatter of embeddingBackward for one list of ids, on the GPU: made once (a host sort and three
 * uploads), then used by every backward over those ids (the LoRA bank scatters the same rows 2 x 7 x layers
 * times a micro-batch). release() it once the last backward using it is recorded. */
export interface ScatterPlan {
  /** Number of ids (rows of dY). */
  readonly rows: number;
  /** Rows of the table the ids index (each id is below it). */
  readonly vocab: number;
  readonly order: Tensor;
  readonly segStart: Tensor;
  readonly segId: Tensor;
  release(): void;
}

export function scatterPlan(gpu: Gpu, ids: Uint32Array, vocab: number): ScatterPlan {
  if (!ids.length) throw new ShapeError('embedding_backward: a scatter plan needs at least one id');
  checkIds('embedding_backward', ids, vocab);
  const { order, segStart, segId } = segmentIds(ids);
  const tensors = {
    order: gpu.upload(order, [order.length], 'u32', 'embedding.order'),
    segStart: gpu.upload(segStart, [segStart.length], 'u32', 'embedding.seg_start'),
    segId: gpu.upload(segId, [segId.length], 'u32', 'embedding.seg_id'),
  };
  return {
    rows: ids.length,
    vocab,
    ...tensors,
    release: () => {
      for (const t of Object.values(tensors)) t.release();
    },
  };
}

/** dTable[vocab, H] f32 += scatter of dY[T, H] f32 by ids (rows of ids absent are untouched); ids as CPU ids
 * (checked and planned here) or as a ScatterPlan made for a table of as many rows. */
export function embeddingBackward(gpu: Gpu, dY: Tensor, ids: Uint32Array | ScatterPlan, dTable: Tensor): Tensor {
  const k = 'embedding_backward';
  expectDtype(k, dY, 'f32');
  expectDtype(k, dTable, 'f32');
  if (dTable.shape.length !== 2) throw new ShapeError(`${k}: ${dTable.label} has shape [${dTable.shape}], expected [vocab, hidden]`);
  const [vocab, cols] = dTable.shape as [number, number];
  const rows = ids instanceof Uint32Array ? ids.length : ids.rows;
  expectShape(k, dY, [rows, cols]);
  if (!(ids instanceof Uint32Array) && ids.vocab !== vocab) throw new ShapeError(`${k}: the scatter plan is for ${ids.vocab} rows, ${dTable.label} has ${vocab}`);
  if (rows === 0) return dTable;
  const plan = ids instanceof Uint32Array ? scatterPlan(gpu, ids, vocab) : ids;
  const segments = plan.segStart.size - 1;
  gpu.dispatch({
    shader: 'embedding',
    entry: 'backward',
    variant: { aliases: { T: 'f32' } },
    uniforms: new Uniforms().u32(segments).u32(cols).u32(vocab).u32(0),
    bindings: [null, null, null, dY, plan.order, plan.segStart, plan.segId, dTable],
    workgroups: grid1d(ceilDiv(segments * cols, 256)),
    label: k,
  });
  if (plan !== ids) plan.release();
  return dTable;
}
