// The activation and gradient buffers one training step (lossAndGradients, src/model/backward.ts) allocates,
// computed from shapes alone: to check before running that no single buffer passes the device's
// maxStorageBufferBindingSize (128 MiB by default in WebGPU) and to report the largest. Weights, the
// adapter's A/B and the optimizer's moments are listed apart (they exist before and after a step).
// Keep in step with backward.ts, qwen3.ts, lora.ts and the kernels' scratch (matmul split-K partials,
// rmsnorm dw partials, attention backward stats): test/model/train-memory.test.ts compares the largest
// entry with what a real step allocates.
import { ceilDiv } from '../kernels/grid.ts';
import { matmulSplit, matmulVariant } from '../kernels/matmul.ts';
import type { LinearModule } from './adapter.ts';
import type { Qwen3Config } from './config.ts';
import { linearShapes } from './lora.ts';

export interface StepShape {
  /** Tokens of the packed batch (all sequences). */
  tokens: number;
  /** Sequences in the batch (default 1). */
  sequences?: number;
  /** Rows of logits at a time (default 128; backward.ts's defaultChunkRows picks 2048 on tensor cores and headless GPUs). */
  chunkRows?: number;
  /** LoRA rank on the targets (default all seven modules); 0 for none. */
  loraRank?: number;
  loraTargets?: readonly LinearModule[];
  /** Full-parameter mode: an f32 gradient per base weight. */
  full?: boolean;
}

export interface StepBuffer {
  name: string;
  bytes: number;
  /** 'activation' (lives within the step), 'gradient' (accumulated parameter gradients), 'parameter' (weights, adapters). */
  kind: 'activation' | 'gradient' | 'parameter';
}

const F32 = 4;
const RMSNORM_DW_CHUNK = 256; // rows per partial sum in shaders/rmsnorm.wgsl

/** Every distinct buffer shape a step allocates (each listed once, by its largest instance). */
export function trainingBuffers(c: Qwen3Config, s: StepShape): StepBuffer[] {
  const T = s.tokens;
  const S = s.sequences ?? 1;
  const chunk = Math.min(s.chunkRows ?? 128, T);
  const r = s.loraRank ?? 0;
  const targets = new Set<LinearModule>(s.loraTargets ?? ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj']);
  const H = c.hiddenSize;
  const out: StepBuffer[] = [];
  const act = (name: string, elements: number) => out.push({ name, bytes: elements * F32, kind: 'activation' });
  /** The output of a matmul (when new) and its split-K partial sums, if matmul() splits this shape. */
  const matmul = (name: string, M: number, N: number, K: number, opts: { transA?: boolean; transB?: boolean; newOut?: boolean } = {}) => {
    const shape = { M, N, K, transA: opts.transA ?? false, transB: opts.transB ?? false };
    if (opts.newOut ?? true) act(`${name} [${M}, ${N}]`, M * N);
    if (matmulVariant(shape) === 'tile64') {
      const { splits } = matmulSplit(shape);
      if (splits > 1) act(`${name} split-K partials [${splits}, ${M}, ${N}]`, splits * M * N);
    }
  };

  // Per-token vectors: ids, positions, targets, mask, logp, entropy, lse, dlogp, dentropy.
  act(`per-token vector [${T}]`, T);
  act(`seq starts / loss stats [${S}, 9]`, S * 9);
  // Residual stream, norms, their gradients.
  act(`hidden [${T}, ${H}]`, T * H);
  act(`norm rstd [${T}]`, T);
  act(`q-norm rstd, attention lse [${T}, ${c.numHeads}]`, T * c.numHeads);
  act(`attention backward stats [${T * c.numHeads}, 2]`, T * c.numHeads * 2);
  act(`mlp gate/up/act and their gradients [${T}, ${c.intermediateSize}]`, T * c.intermediateSize);
  if (s.full) {
    for (const [rows, n] of [[T, H], [T * c.numHeads, c.headDim], [T * c.numKvHeads, c.headDim]] as const) {
      act(`rmsnorm dw partials [${ceilDiv(rows, RMSNORM_DW_CHUNK)}, ${n}]`, ceilDiv(rows, RMSNORM_DW_CHUNK) * n);
    }
  }
  // Linear layers (their outputs also cover q, k, v, the attention output and dq, dk, dv): forward y = x·Wᵀ, backward dx = dy·W, dW = dyᵀ·x (full), and the LoRA pieces.
  for (const [m, sh] of Object.entries(linearShapes(c)) as [LinearModule, { in: number; out: number }][]) {
    matmul(`${m} y`, T, sh.out, sh.in, { transB: true });
    matmul(`${m} dx`, T, sh.in, sh.out);
    if (s.full) matmul(`${m} dW`, sh.out, sh.in, T, { transA: true, newOut: false });
    if (r > 0 && targets.has(m)) {
      matmul(`lora ${m} x·Aᵀ`, T, r, sh.in, { transB: true });
      matmul(`lora ${m} h·Bᵀ`, T, sh.out, r, { transB: true, newOut: false });
      matmul(`lora ${m} dB`, sh.out, r, T, { transA: true, newOut: false });
      matmul(`lora ${m} dy·B`, T, r, sh.out);
      matmul(`lora ${m} dA`, r, sh.in, T, { transA: true, newOut: false });
      matmul(`lora ${m} dx`, T, sh.in, r, { newOut: false });
    }
  }
  // Logits in row chunks: hidden rows, logits (overwritten by d logits), d hidden rows, lm_head dW.
  act(`hidden rows [${chunk}, ${H}]`, chunk * H);
  matmul('logits chunk', chunk, c.vocabSize, H, { transB: true });
  matmul('lm_head dx', chunk, H, c.vocabSize);
  if (s.full) matmul('lm_head dW', c.vocabSize, H, chunk, { transA: true, newOut: false });

  // Parameters and gradients.
  const shapes = linearShapes(c);
  if (r > 0) {
    for (const m of targets) {
      const n = Math.max(r * shapes[m].in, shapes[m].out * r);
      out.push({ name: `lora ${m} A/B (and grad, AdamW m/v)`, bytes: n * F32, kind: 'parameter' });
      out.push({ name: `lora ${m} dA/dB`, bytes: n * F32, kind: 'gradient' });
    }
  }
  if (s.full) {
    out.push({ name: `embed_tokens / lm_head grad [${c.vocabSize}, ${H}]`, bytes: c.vocabSize * H * F32, kind: 'gradient' });
    const maxLinear = Math.max(...Object.values(shapes).map((sh) => sh.in * sh.out));
    out.push({ name: 'largest linear weight grad', bytes: maxLinear * F32, kind: 'gradient' });
  }
  return out;
}

/** The largest buffer of one kind (activations by default) a step allocates. */
export function largestTrainingBuffer(c: Qwen3Config, s: StepShape, kinds: readonly StepBuffer['kind'][] = ['activation']): StepBuffer {
  const list = trainingBuffers(c, s).filter((b) => kinds.includes(b.kind));
  return list.reduce((a, b) => (b.bytes > a.bytes ? b : a));
}
