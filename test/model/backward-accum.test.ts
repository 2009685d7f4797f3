// Gradient accumulation over micro-batches (the loss divided by the whole mini-batch's token / sequence
// counts) against one batch, and a GRPO policy-loss step through the model checked against central
// finite differences of the loss on the LoRA entries with the largest gradients (f32 on the GPU: a step of
// 1e-2 gives about 2e-4 relative agreement on lavapipe; the bound is 5e-3).
import { beforeAll, describe, expect, it } from 'vitest';
import type { Gpu } from '../../src/gpu/gpu.ts';
import type { Tensor } from '../../src/gpu/tensor.ts';
import { logprobs } from '../../src/kernels/logprobs.ts';
import { matmul } from '../../src/kernels/matmul.ts';
import { lossAndGradients, lossAndGradientsAhead, nextTokenBatch, type TrainBatch } from '../../src/model/backward.ts';
import type { LoraAdapter, TrainableParam } from '../../src/model/lora.ts';
import { loadPeft } from '../../src/model/peft.ts';
import { Qwen3Model } from '../../src/model/qwen3.ts';
import { DirectorySource } from '../../src/model/source.ts';
import { loadQwen3 } from '../../src/model/weights.ts';
import { type LossResult, nllLoss, policyLoss, policyLossGradsAtRatioOne, releaseLossResult } from '../../src/rl/loss.ts';
import { testGpu } from '../helpers/gpu.ts';
import { relError } from '../helpers/random.ts';
import { FIXTURE_MODELS } from '../helpers/tiny-qwen3.ts';

const SEQS = [
  [5, 17, 33, 8, 91, 120, 7, 7, 42, 3, 250, 19],
  [77, 1, 64, 64, 300, 12, 9],
];
/** Prompt tokens at the start of each sequence (not trained on, like a GRPO response mask). */
const PROMPT = 3;
const ADVANTAGES = [1.25, -0.8];

let gpu: Gpu;
let model: Qwen3Model;
let adapter: LoraAdapter;
let params: TrainableParam[];

beforeAll(async () => {
  gpu = await testGpu();
  const dir = `${FIXTURE_MODELS}/gqa-tied`;
  const { config, weights } = await loadQwen3(gpu, new DirectorySource(dir), { dtype: 'f32' });
  model = new Qwen3Model(gpu, config, weights);
  adapter = (await loadPeft(gpu, new DirectorySource(`${dir}/adapter`), config, 'accum')).adapter;
  params = adapter.parameters();
});

/** logp of each position's target under the current adapter, forward only. */
function logpNow(b: TrainBatch): Tensor {
  const targets = gpu.upload(b.targets, [b.ids.length], 'u32', 'targets');
  const hidden = model.forward({ ids: b.ids, seqLens: b.seqLens }, { adapter, hiddenOnly: true });
  const logits = matmul(gpu, hidden, model.weights.lmHead, { transB: true });
  const s = logprobs(gpu, logits, targets);
  for (const t of [targets, hidden, logits, s.entropy, s.lse]) t.release();
  return s.logp;
}

function zeroGrads(): void {
  for (const p of params) gpu.write(p.grad, new Float32Array(p.grad.size));
}

async function readGrads(): Promise<Float32Array[]> {
  const out: Float32Array[] = [];
  for (const p of params) out.push((await gpu.readF32(p.grad)).slice());
  return out;
}

/** Response mask: 0 on each sequence's prompt and last position. */
function responseMask(seqs: number[][]): Float32Array {
  const b = nextTokenBatch(seqs);
  let o = 0;
  for (const s of seqs) {
    for (let t = 0; t < PROMPT; t++) b.mask[o + t] = 0;
    o += s.length;
  }
  return b.mask;
}

type LossOf = (logp: Tensor, seqs: number[][], first: number) => LossResult;

/** One lossAndGradients call over `seqs` (sequences first.. of SEQS); the loss value. */
async function step(seqs: number[][], lossOf: LossOf, first: number): Promise<number> {
  const b = nextTokenBatch(seqs);
  const { result, stats } = lossAndGradients(model, b, (s) => lossOf(s.logp, seqs, first), { adapter, chunkRows: 7 });
  const loss = (await gpu.readF32(result.loss))[0]!;
  releaseLossResult(result);
  stats.logp.release();
  stats.entropy.release();
  return loss;
}

/** Gradients of the whole batch at once, then of each sequence as its own micro-batch (accumulated). */
async function compareMicroBatches(lossOf: LossOf): Promise<void> {
  zeroGrads();
  const whole = await step(SEQS, lossOf, 0);
  const want = await readGrads();
  zeroGrads();
  let parts = 0;
  for (let i = 0; i < SEQS.length; i++) parts += await step([SEQS[i]!], lossOf, i);
  const got = await readGrads();
  expect(Math.abs(parts - whole) / Math.abs(whole)).toBeLessThan(1e-5);
  params.forEach((p, i) => expect(relError(got[i]!, want[i]!), p.name).toBeLessThan(1e-5));
  expect(want.some((g) => g.some((v) => v !== 0))).toBe(true);
}

/** Uploads per-run tensors and releases them after the loss kernel is recorded. */
function withTensors(make: () => Tensor[], run: (t: Tensor[]) => LossResult): LossResult {
  const ts = make();
  const r = run(ts);
  for (const t of ts) t.release();
  return r;
}

describe('micro-batches with gradient accumulation', () => {
  it('NLL token-mean with the mini-batch tokenTotal: two micro-batches give one batch\'s gradients', async () => {
    const tokenTotal = SEQS.reduce((a, s) => a + s.length - 1, 0);
    await compareMicroBatches((logp, seqs) =>
      withTensors(() => [gpu.upload(nextTokenBatch(seqs).mask, [logp.size], 'f32', 'mask')], ([mask]) =>
        nllLoss(gpu, { logp, mask: mask!, seqStarts: nextTokenBatch(seqs).seqStarts }, { agg: 'token-mean', tokenTotal })),
    );
  }, 400_000);

  it('policy loss seq-mean-token-mean with the mini-batch seqTotal: two micro-batches give one batch\'s gradients', async () => {
    // logp_old near the current policy's (ratios within and outside the clip range both occur).
    const b = nextTokenBatch(SEQS);
    const cur = logpNow(b);
    const old = (await gpu.readF32(cur)).map((v, t) => v + 0.3 * Math.sin(1.7 * t));
    cur.release();
    const offset = (first: number) => SEQS.slice(0, first).reduce((a, s) => a + s.length, 0);
    const logpOldOf = (first: number, T: number) => old.slice(offset(first), offset(first) + T);
    await compareMicroBatches((logp, seqs, first) =>
      withTensors(
        () => [
          gpu.upload(responseMask(seqs), [logp.size], 'f32', 'mask'),
          gpu.upload(logpOldOf(first, logp.size), [logp.size], 'f32', 'logp_old'),
          gpu.upload(ADVANTAGES.slice(first, first + seqs.length), [seqs.length], 'f32', 'advantages'),
        ],
        ([mask, logpOld, advantages]) =>
          policyLoss(gpu, { logp, logpOld: logpOld!, advantages: advantages!, mask: mask!, seqStarts: nextTokenBatch(seqs).seqStarts }, { agg: 'seq-mean-token-mean', seqTotal: SEQS.length }),
      ),
    );
  }, 400_000);
});

describe('GRPO policy loss through the model', () => {
  it('LoRA gradients match central finite differences of the loss', async () => {
    const b = nextTokenBatch(SEQS);
    const T = b.ids.length;
    const mask = gpu.upload(responseMask(SEQS), [T], 'f32', 'mask');
    const advantages = gpu.upload(ADVANTAGES, [SEQS.length], 'f32', 'advantages');
    const logpOld = logpNow(b);
    const loss = (logp: Tensor) => policyLoss(gpu, { logp, logpOld, advantages, mask, seqStarts: b.seqStarts });
    const lossValue = async (): Promise<number> => {
      const logp = logpNow(b);
      const r = loss(logp);
      const v = (await gpu.readF32(r.loss))[0]!;
      releaseLossResult(r);
      logp.release();
      return v;
    };

    zeroGrads();
    const { result, stats } = lossAndGradients(model, b, (s) => loss(s.logp), { adapter, chunkRows: 5 });
    const l0 = (await gpu.readF32(result.loss))[0]!;
    releaseLossResult(result);
    stats.logp.release();
    stats.entropy.release();
    // At logp = logp_old the ratio is 1 and the loss is −mean over sequences of A · 1.
    expect(Math.abs(l0 - -(ADVANTAGES[0]! + ADVANTAGES[1]!) / 2)).toBeLessThan(1e-5);

    // The largest-gradient entry of a few tensors (an attention A, an MLP B, a last-layer B).
    const picks = ['layers.0.self_attn.q_proj.lora_A', 'layers.0.mlp.down_proj.lora_B', 'layers.1.self_attn.v_proj.lora_B'];
    const h = 1e-2;
    for (const key of picks) {
      const p = params.find((q) => q.name.includes(key))!;
      expect(p, key).toBeDefined();
      const g = await gpu.readF32(p.grad);
      let k = 0;
      for (let i = 1; i < g.length; i++) if (Math.abs(g[i]!) > Math.abs(g[k]!)) k = i;
      expect(Math.abs(g[k]!), key).toBeGreaterThan(1e-3);
      const w = (await gpu.readF32(p.param))[k]!;
      gpu.write(p.param, [w + h], k);
      const up = await lossValue();
      gpu.write(p.param, [w - h], k);
      const down = await lossValue();
      gpu.write(p.param, [w], k);
      const fd = (up - down) / (2 * h);
      expect(Math.abs(fd - g[k]!) / Math.abs(g[k]!), `${p.name}[${k}]: analytic ${g[k]} vs finite difference ${fd}`).toBeLessThan(5e-3);
    }
    for (const t of [mask, advantages, logpOld]) t.release();
  }, 400_000);

  it('with the gradient known ahead (ratio 1), lm_head runs once a chunk and the gradients, logp and entropy are bit-equal', async () => {
    const b = nextTokenBatch(SEQS);
    const T = b.ids.length;
    const mask = gpu.upload(responseMask(SEQS), [T], 'f32', 'mask');
    const advantages = gpu.upload(ADVANTAGES, [SEQS.length], 'f32', 'advantages');
    const opts = { entropyCoef: 0.01 };
    const runs: { grads: Float32Array[]; logp: Float32Array; entropy: Float32Array; loss: number; lmHead: number }[] = [];
    for (const ahead of [false, true]) {
      zeroGrads();
      let lmHead = 0;
      const dispatch = gpu.dispatch.bind(gpu);
      gpu.dispatch = (d) => {
        if (d.label === 'lm_head') lmHead++;
        return dispatch(d);
      };
      let loss: LossResult | undefined;
      const measure = (s: { logp: Tensor; entropy: Tensor }) => (loss = policyLoss(gpu, { logp: s.logp, logpOld: s.logp, advantages, mask, seqStarts: b.seqStarts, entropy: s.entropy }, opts));
      try {
        const known = ahead ? policyLossGradsAtRatioOne(gpu, { advantages, mask, seqStarts: b.seqStarts, entropy: true }, opts) : null;
        const { stats } = known ? lossAndGradientsAhead(model, b, known, measure, { adapter, chunkRows: 7 }) : lossAndGradients(model, b, measure, { adapter, chunkRows: 7 });
        runs.push({ grads: await readGrads(), logp: await gpu.readF32(stats.logp), entropy: await gpu.readF32(stats.entropy), loss: (await gpu.readF32(loss!.loss))[0]!, lmHead });
        stats.logp.release();
        stats.entropy.release();
        releaseLossResult(loss!);
        known?.dlogp.release();
        known?.dentropy?.release();
      } finally {
        gpu.dispatch = dispatch;
      }
    }
    const chunks = Math.ceil(T / 7);
    expect(runs.map((r) => r.lmHead)).toEqual([2 * chunks, chunks]);
    expect(runs[0]!.grads.some((g) => g.some((v) => v !== 0))).toBe(true);
    for (const [j, p] of params.entries()) expect(Array.from(runs[1]!.grads[j]!), p.name).toEqual(Array.from(runs[0]!.grads[j]!));
    expect(Array.from(runs[1]!.logp)).toEqual(Array.from(runs[0]!.logp));
    expect(Array.from(runs[1]!.entropy)).toEqual(Array.from(runs[0]!.entropy));
    expect(runs[1]!.loss).toBe(runs[0]!.loss);
    for (const t of [mask, advantages]) t.release();
  }, 400_000);
});
