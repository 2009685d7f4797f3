// The matmul products a Qwen3 model runs, as the autotuner (src/kernels/matmul-tune.ts) takes them: x·Wᵀ and
// dy·W of every distinct linear shape and of lm_head, at a set of row counts.
import type { TuneShape } from '../kernels/matmul-tuning.ts';
import type { Qwen3Config } from './config.ts';
import { linearShapes } from './lora.ts';

/** Row counts tuned by default: decode and rollout batches up to a training step's 8x1024 tokens. At most 16 rows
 * matmul_rows reads each weight once for all rows (and fuses q/k/v, gate/up, SwiGLU): no other kernel comes close. */
export const DEFAULT_TUNE_ROWS = [32, 64, 128, 256, 512, 1024, 2048, 4096, 8192] as const;
/** lm_head's products run a chunk of rows at a time (backward.ts: at most 2048). */
const LM_HEAD_MAX_ROWS = 2048;

/** The products a Qwen3 model of this config runs, at each row count: x·Wᵀ and dy·W of every distinct linear
 * shape and of lm_head (to LM_HEAD_MAX_ROWS rows), activations f32 and weights `weights`. */
export function modelTuneShapes(c: Qwen3Config, weights: 'f16' | 'f32', rows: readonly number[] = DEFAULT_TUNE_ROWS): TuneShape[] {
  const pairs = new Map<string, [number, number, boolean]>(); // out x in, lm_head
  for (const sh of Object.values(linearShapes(c))) pairs.set(`${sh.out}x${sh.in}`, [sh.out, sh.in, false]);
  pairs.set(`${c.vocabSize}x${c.hiddenSize}`, [c.vocabSize, c.hiddenSize, true]);
  const shapes: TuneShape[] = [];
  for (const [out, inp, head] of pairs.values()) {
    for (const M of rows) {
      if (head && M > LM_HEAD_MAX_ROWS) continue;
      shapes.push({ M, N: out, K: inp, transA: false, transB: true, a: 'f32', b: weights }); // y = x·Wᵀ
      shapes.push({ M, N: inp, K: out, transA: false, transB: false, a: 'f32', b: weights }); // dx = dy·W
    }
  }
  return shapes;
}
