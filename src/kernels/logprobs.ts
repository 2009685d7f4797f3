// Fused log-softmax statistics over the full vocabulary and their gradient (shaders/logprobs.wgsl):
// per row of logits [rows, V] (at temperature τ): logp of the target, entropy, and lse (saved for backward).
// Rows can come in chunks of a larger batch: per-row arrays have `totalRows` entries and a chunk starts at
// `rowOffset`, so no [T, V] array for the whole batch is needed at once.
import type { Gpu } from '../gpu/gpu.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { Uniforms } from '../gpu/uniforms.ts';
import { expectDtype, ShapeError } from './check.ts';
import { grid1d } from './grid.ts';

export interface LogprobStats {
  logp: Tensor; // f32 [totalRows]
  entropy: Tensor; // f32 [totalRows]
  lse: Tensor; // f32 [totalRows], logsumexp(logits / τ)
}

export interface LogprobOptions {
  temperature?: number;
  /** First row of this chunk within the per-row arrays (default 0). */
  rowOffset?: number;
  /** Write into these (f32 [totalRows]) instead of new tensors. */
  out?: Partial<LogprobStats>;
}

function dims(kernel: string, logits: Tensor, targets: Tensor, rowOffset: number): { rows: number; vocab: number } {
  expectDtype(kernel, logits, 'f32', 'f16');
  expectDtype(kernel, targets, 'u32');
  if (logits.shape.length !== 2) throw new ShapeError(`${kernel}: ${logits.label} has shape [${logits.shape}], expected [rows, vocab]`);
  const [rows, vocab] = logits.shape as [number, number];
  if (rowOffset + rows > targets.size) {
    throw new ShapeError(`${kernel}: rows ${rowOffset}..${rowOffset + rows} of ${logits.label} exceed ${targets.label}'s ${targets.size}`);
  }
  return { rows, vocab };
}

function perRow(kernel: string, t: Tensor, n: number): Tensor {
  expectDtype(kernel, t, 'f32');
  if (t.size !== n) throw new ShapeError(`${kernel}: ${t.label} has ${t.size} elements, expected ${n} (one per row)`);
  return t;
}

function temperatureOf(kernel: string, t: number): number {
  if (!(t > 0) || !Number.isFinite(t)) throw new ShapeError(`${kernel}: temperature must be positive and finite, got ${t}`);
  return t;
}

/** logp[r] = log softmax(logits[r] / τ)[targets[r]], entropy[r] and lse[r], for rows rowOffset.. of targets (u32 [totalRows]). */
export function logprobs(gpu: Gpu, logits: Tensor, targets: Tensor, opts: LogprobOptions = {}): LogprobStats {
  const k = 'logprobs';
  const rowOffset = opts.rowOffset ?? 0;
  const tau = temperatureOf(k, opts.temperature ?? 1);
  const { rows, vocab } = dims(k, logits, targets, rowOffset);
  const total = targets.size;
  const logp = perRow(k, opts.out?.logp ?? gpu.tensor([total], 'f32', 'logprobs.logp'), total);
  const entropy = perRow(k, opts.out?.entropy ?? gpu.tensor([total], 'f32', 'logprobs.entropy'), total);
  const lse = perRow(k, opts.out?.lse ?? gpu.tensor([total], 'f32', 'logprobs.lse'), total);
  gpu.dispatch({
    shader: 'logprobs',
    entry: 'forward',
    variant: { aliases: { T: logits.dtype } },
    uniforms: new Uniforms().u32(rows).u32(vocab).f32(1 / tau).u32(rowOffset).u32(0),
    bindings: [logits, targets, logp, entropy, lse, null, null],
    workgroups: grid1d(rows),
    label: k,
  });
  return { logp, entropy, lse };
}

/** Overwrites the logits chunk with d loss / d logits, given d loss / d logp (and optionally / d entropy)
 * per row, and the forward's entropy and lse at the same temperature. Returns the same tensor. */
export function logprobsBackward(
  gpu: Gpu,
  logits: Tensor,
  targets: Tensor,
  stats: { entropy: Tensor; lse: Tensor },
  grads: { dlogp: Tensor; dentropy?: Tensor },
  opts: { temperature?: number; rowOffset?: number } = {},
): Tensor {
  const k = 'logprobs_backward';
  const rowOffset = opts.rowOffset ?? 0;
  const tau = temperatureOf(k, opts.temperature ?? 1);
  const { rows, vocab } = dims(k, logits, targets, rowOffset);
  const total = targets.size;
  for (const t of [stats.entropy, stats.lse, grads.dlogp]) perRow(k, t, total);
  if (grads.dentropy) perRow(k, grads.dentropy, total);
  gpu.dispatch({
    shader: 'logprobs',
    entry: 'backward',
    variant: { aliases: { T: logits.dtype } },
    uniforms: new Uniforms().u32(rows).u32(vocab).f32(1 / tau).u32(rowOffset).u32(grads.dentropy ? 1 : 0),
    // Without a dentropy, its binding takes dlogp's buffer and the shader ignores it (use_dentropy = 0).
    bindings: [logits, targets, null, stats.entropy, stats.lse, grads.dlogp, grads.dentropy ?? grads.dlogp],
    workgroups: grid1d(rows),
    label: k,
  });
  return logits;
}
