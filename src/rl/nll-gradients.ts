// Next-token NLL through the model (SFT, `troupe grad`, the training-step bench): its d loss / d logp does not
// depend on logp, so it is known before the forward and lm_head runs once a chunk of logits (lossAndGradientsAhead).
import type { Tensor } from '../gpu/tensor.ts';
import { type BackwardOptions, lossAndGradientsAhead, type TokenStats, type TrainBatch } from '../model/backward.ts';
import type { Qwen3Model } from '../model/qwen3.ts';
import { type LossResult, nllLoss, nllLossGrads, type NllOptions } from './loss.ts';

/** Loss (token NLL over `mask`) and gradients of one batch; the caller releases the result and the stats. */
export function nllLossAndGradients(
  model: Qwen3Model,
  batch: TrainBatch & { seqStarts: Uint32Array },
  mask: Tensor,
  opts: BackwardOptions = {},
  nll: NllOptions = { agg: 'token-mean' },
): { result: LossResult; stats: TokenStats } {
  const gpu = model.gpu;
  const known = nllLossGrads(gpu, { mask, seqStarts: batch.seqStarts, entropy: false }, nll);
  const out = lossAndGradientsAhead(model, batch, known, (s) => nllLoss(gpu, { logp: s.logp, mask, seqStarts: batch.seqStarts }, nll), opts);
  known.dlogp.release();
  return out;
}
