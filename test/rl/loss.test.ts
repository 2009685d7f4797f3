import { describe, expect, it } from 'vitest';
import type { Gpu } from '../../src/gpu/gpu.ts';
import { LOSS_AGG_MODES, LossError, nllLoss, nllLossGrads, policyLoss, policyLossGradsAtRatioOne, readSeqStats, SEQ_STAT_FIELDS, summarizeByRole, type LossAggMode } from '../../src/rl/loss.ts';
import { testGpu } from '../helpers/gpu.ts';
import { maxAbs, mixedError, randn, rng } from '../helpers/random.ts';
import { policyLossRef, type PolicyLossRefOptions } from '../ref/policy-loss.ts';

interface Case {
  lens: number[];
  seed: number;
}

function makeInputs(c: Case) {
  const starts = [0];
  for (const l of c.lens) starts.push(starts[starts.length - 1]! + l);
  const T = starts[starts.length - 1]!;
  const r = rng(c.seed);
  const logpOld = randn(T, c.seed + 1, 1).map((x) => -Math.abs(x) - 0.05);
  const delta = randn(T, c.seed + 2, 0.3);
  // a few extreme log-ratios exercise the ±20 clamp
  for (let t = 0; t < T; t += 37) delta[t] = (t % 2 ? 1 : -1) * (21 + r());
  const logp = logpOld.map((x, i) => x + delta[i]!);
  const advSeq = randn(c.lens.length, c.seed + 3, 1);
  const adv = new Float32Array(T);
  c.lens.forEach((_, s) => adv.fill(advSeq[s]!, starts[s]!, starts[s + 1]!));
  const mask = new Float32Array(T).map(() => (r() < 0.8 ? 1 : 0));
  const refLogp = logp.map((x, i) => x + randn(T, c.seed + 4, 0.5)[i]!);
  const entropy = randn(T, c.seed + 5, 1).map((x) => Math.abs(x) + 0.01);
  return { T, starts, logp, logpOld, adv, advSeq, mask, refLogp, entropy };
}

const CASES: Case[] = [
  { lens: [1], seed: 11 },
  { lens: [5, 0, 300], seed: 12 },
  { lens: Array.from({ length: 70 }, (_, i) => 1 + ((i * 7919) % 41)), seed: 13 },
  { lens: [600, 3], seed: 14 },
];

function upload(gpu: Gpu, x: ReturnType<typeof makeInputs>) {
  const f = (a: Float32Array, name: string) => gpu.upload(a, [a.length], 'f32', name);
  return {
    logp: f(x.logp, 'logp'),
    logpOld: f(x.logpOld, 'logpOld'),
    advantages: f(x.adv, 'adv'),
    mask: f(x.mask, 'mask'),
    refLogp: f(x.refLogp, 'refLogp'),
    entropy: f(x.entropy, 'entropy'),
    seqStarts: gpu.upload(new Uint32Array(x.starts), [x.starts.length], 'u32', 'seqStarts'),
  };
}

const base: PolicyLossRefOptions = { clipLow: 0.2, clipHigh: 0.28, dualClip: 3, klCoef: 0, entropyCoef: 0, agg: 'seq-mean-token-mean', normLength: 512 };

/** Elementwise tolerance against the f64 reference: |got − want| <= RTOL·|want| + ATOL·max|want| for every
 * token's d loss / d logp, d loss / d entropy and every per-sequence stat (a bug confined to some tokens, or
 * hidden under one large value, fails). */
const RTOL = 1e-5;
const ATOL = 1e-6;

/** The worst error of a GPU result against a reference, in units of the tolerance (at most 1: a match). */
async function mismatch(gpu: Gpu, res: ReturnType<typeof policyLoss>, ref: ReturnType<typeof policyLossRef>): Promise<number> {
  const el = (got: ArrayLike<number>, want: ArrayLike<number>) => mixedError(got, want, RTOL, ATOL * Math.max(maxAbs(want), 1e-30));
  const loss = (await gpu.readF32(res.loss))[0]!;
  let worst = el([loss], [ref.loss]);
  worst = Math.max(worst, el(await gpu.readF32(res.dlogp), ref.dlogp));
  if (res.dentropy) worst = Math.max(worst, el(await gpu.readF32(res.dentropy), ref.dentropy));
  const stats = await readSeqStats(gpu, res.stats);
  for (const f of SEQ_STAT_FIELDS) worst = Math.max(worst, el(stats.map((s) => s[f]), ref.stats.map((s) => s[f])));
  return worst;
}

async function expectMatches(gpu: Gpu, res: ReturnType<typeof policyLoss>, ref: ReturnType<typeof policyLossRef>) {
  expect(await mismatch(gpu, res, ref)).toBeLessThanOrEqual(1);
}

describe('policy loss vs CPU reference', () => {
  for (const c of CASES) {
    for (const agg of LOSS_AGG_MODES) {
      it(`${agg}, lens ${c.lens.length > 4 ? `${c.lens.length} seqs` : `[${c.lens}]`}`, async () => {
        const gpu = await testGpu();
        const x = makeInputs(c);
        const t = upload(gpu, x);
        const inp = { logp: x.logp, logpOld: x.logpOld, advantages: x.adv, mask: x.mask, seqStarts: x.starts };
        // plain GRPO (the study's settings)
        await expectMatches(gpu, policyLoss(gpu, { ...t, refLogp: undefined, entropy: undefined }, { agg, normLength: 512 }), policyLossRef(inp, { ...base, agg }));
        // with KL to a reference, entropy bonus, dual clip off
        const o = { agg, normLength: 512, klCoef: 0.05, entropyCoef: 0.01, dualClip: null };
        const res = policyLoss(gpu, t, o);
        const full = { ...inp, refLogp: x.refLogp, entropy: x.entropy };
        await expectMatches(gpu, res, policyLossRef(full, { ...base, ...o }));
        // the comparison catches a KL term off by half (what a max-normalised error let through)
        expect(await mismatch(gpu, res, policyLossRef(full, { ...base, ...o, klCoef: 1.5 * o.klCoef }))).toBeGreaterThan(10);
      });
    }
  }

  it('per-sequence advantages broadcast like per-token ones; CPU seqStarts accepted', async () => {
    const gpu = await testGpu();
    const x = makeInputs(CASES[2]!);
    const t = upload(gpu, x);
    const perSeq = gpu.upload(x.advSeq, [x.advSeq.length], 'f32', 'advSeq');
    const a = policyLoss(gpu, { ...t, advantages: perSeq, seqStarts: x.starts });
    const b = policyLoss(gpu, t);
    expect(Array.from(await gpu.readF32(a.dlogp))).toEqual(Array.from(await gpu.readF32(b.dlogp)));
    expect((await gpu.readF32(a.loss))[0]).toBe((await gpu.readF32(b.loss))[0]);
  });

  it('is deterministic: two runs are bit-identical', async () => {
    const gpu = await testGpu();
    const t = upload(gpu, makeInputs(CASES[3]!));
    const a = policyLoss(gpu, t, { entropyCoef: 0.01 });
    const b = policyLoss(gpu, t, { entropyCoef: 0.01 });
    expect(Array.from(await gpu.readF32(a.dlogp))).toEqual(Array.from(await gpu.readF32(b.dlogp)));
    expect(Array.from(await gpu.readF32(a.stats))).toEqual(Array.from(await gpu.readF32(b.stats)));
  });

  it('gradients at ratio 1 before logp is known equal policyLoss at logp = logp_old, bit for bit, in every mode', async () => {
    const gpu = await testGpu();
    const x = makeInputs(CASES[2]!);
    const t = upload(gpu, x);
    for (const agg of LOSS_AGG_MODES) {
      for (const o of [{ agg, normLength: 512 }, { agg, normLength: 512, entropyCoef: 0.01, dualClip: null, tokenTotal: 900, seqTotal: 90 }]) {
        const at = policyLoss(gpu, { ...t, logpOld: t.logp, refLogp: undefined }, o);
        const ahead = policyLossGradsAtRatioOne(gpu, { advantages: t.advantages, mask: t.mask, seqStarts: t.seqStarts, entropy: true }, o);
        const want = await gpu.readF32(at.dlogp);
        expect(want.some((v) => v !== 0)).toBe(true);
        expect(Array.from(await gpu.readF32(ahead.dlogp)), agg).toEqual(Array.from(want));
        expect(Array.from(await gpu.readF32(ahead.dentropy!)), agg).toEqual(Array.from(await gpu.readF32(at.dentropy!)));
      }
    }
    // Not at another logp_old: there the ratio differs from 1 and so does the gradient.
    const off = policyLoss(gpu, { ...t, refLogp: undefined });
    const ahead = policyLossGradsAtRatioOne(gpu, { advantages: t.advantages, mask: t.mask, seqStarts: t.seqStarts, entropy: false });
    expect(ahead.dentropy).toBeNull();
    expect(Array.from(await gpu.readF32(ahead.dlogp))).not.toEqual(Array.from(await gpu.readF32(off.dlogp)));
    expect(() => policyLossGradsAtRatioOne(gpu, { advantages: t.advantages, mask: t.mask, seqStarts: t.seqStarts, entropy: false }, { klCoef: 0.1 })).toThrow(/klCoef 0.1.*depends on logp/);
  });

  it('micro-batches with the mini-batch totals sum to the mini-batch loss', async () => {
    const gpu = await testGpu();
    const x = makeInputs({ lens: [7, 12, 3, 9], seed: 21 });
    for (const agg of ['token-mean', 'seq-mean-token-mean', 'seq-mean-token-sum'] as LossAggMode[]) {
      const full = policyLossRef({ logp: x.logp, logpOld: x.logpOld, advantages: x.adv, mask: x.mask, seqStarts: x.starts }, { ...base, agg });
      const tokenTotal = full.stats.reduce((a, s) => a + s.tokens, 0);
      const seqTotal = full.stats.filter((s) => s.tokens > 0).length;
      let sum = 0;
      for (const [lo, hi] of [[0, 2], [2, 4]] as const) {
        const a = x.starts[lo]!;
        const b = x.starts[hi]!;
        const sl = (v: Float32Array) => gpu.upload(v.slice(a, b), [b - a], 'f32', 'micro');
        const res = policyLoss(
          gpu,
          { logp: sl(x.logp), logpOld: sl(x.logpOld), advantages: sl(x.adv), mask: sl(x.mask), seqStarts: x.starts.slice(lo, hi + 1).map((s) => s - a) },
          { agg, tokenTotal, seqTotal },
        );
        sum += (await gpu.readF32(res.loss))[0]!;
      }
      expect(sum).toBeCloseTo(full.loss, 5);
    }
  });
});

describe('policy loss: hand-checkable cases', () => {
  // One sequence of 6 tokens; logp_old = 0 so ratio = exp(logp). token-mean over 6 tokens.
  const r = [1.0, 1.5, 1.5, 0.5, 0.5, 4.0];
  const A = [1, 1, -1, -1, 1, -1];
  it('ratio beyond the clip in the direction of A gives zero gradient; dual clip caps the loss', async () => {
    const gpu = await testGpu();
    const logp = new Float32Array(r.map(Math.log));
    const ref = policyLossRef({ logp, logpOld: new Float32Array(6), advantages: A, mask: new Float32Array(6).fill(1), seqStarts: [0, 6] }, { ...base, agg: 'token-mean' });
    const f = (a: ArrayLike<number>, n: string) => gpu.upload(new Float32Array(a), [6], 'f32', n);
    const res = policyLoss(gpu, { logp: f(logp, 'logp'), logpOld: f(new Float32Array(6), 'old'), advantages: f(A, 'A'), mask: f(new Float32Array(6).fill(1), 'm'), seqStarts: [0, 6] }, { agg: 'token-mean' });
    const g = await gpu.readF32(res.dlogp);
    const rr = Float32Array.from(r.map(Math.log)).map(Math.exp); // the ratios as f32 logs give them
    // t0: inside the clip, A=1 -> d/dlogp = −A·r/6
    expect(g[0]).toBeCloseTo(-rr[0]! / 6, 6);
    // t1: r=1.5 > 1.28 with A>0: clipped, zero gradient
    expect(Math.abs(g[1]!)).toBe(0);
    // t2: r=1.5 with A<0: unclipped side is larger -> −A·r/6
    expect(g[2]).toBeCloseTo(rr[2]! / 6, 6);
    // t3: r=0.5 < 0.8 with A<0: clipped, zero gradient
    expect(Math.abs(g[3]!)).toBe(0);
    // t4: r=0.5 with A>0: unclipped -> −r/6
    expect(g[4]).toBeCloseTo(-rr[4]! / 6, 6);
    // t5: r=4 > c=3 with A<0: dual clip, loss term −A·c = 3, zero gradient
    expect(Math.abs(g[5]!)).toBe(0);
    const expectedLoss = (-rr[0]! - 1.28 + rr[2]! + 0.8 - rr[4]! + 3) / 6;
    expect((await gpu.readF32(res.loss))[0]).toBeCloseTo(expectedLoss, 6);
    expect(ref.loss).toBeCloseTo(expectedLoss, 6);
    const [st] = await readSeqStats(gpu, res.stats);
    expect(st!.clipped).toBe(2); // t1, t3
    expect(st!.dualClipped).toBe(1); // t5
    expect(st!.tokens).toBe(6);
  });

  it('the reference gradient agrees with finite differences of the reference loss', () => {
    const x = makeInputs({ lens: [9, 4, 13], seed: 31 });
    for (let t = 0; t < x.T; t += 37) x.logp[t] = x.logpOld[t]! + 0.1; // keep away from the ±20 clamp kink
    const inp = (logp: Float64Array) => ({ logp, logpOld: x.logpOld, advantages: x.adv, mask: x.mask, seqStarts: x.starts, refLogp: x.refLogp, entropy: x.entropy });
    for (const agg of LOSS_AGG_MODES) {
      const o = { ...base, agg, klCoef: 0.1, entropyCoef: 0.02 };
      const lp = Float64Array.from(x.logp);
      const g = policyLossRef(inp(lp), o).dlogp;
      for (let t = 0; t < x.T; t++) {
        const h = 1e-6;
        const up = Float64Array.from(lp);
        up[t]! += h;
        const dn = Float64Array.from(lp);
        dn[t]! -= h;
        const fd = (policyLossRef(inp(up), o).loss - policyLossRef(inp(dn), o).loss) / (2 * h);
        expect(Math.abs(fd - g[t]!)).toBeLessThan(1e-6);
      }
    }
  });
});

describe('token NLL and per-role summaries', () => {
  it('NLL matches the reference in every mode', async () => {
    const gpu = await testGpu();
    const x = makeInputs(CASES[2]!);
    const t = upload(gpu, x);
    for (const agg of LOSS_AGG_MODES) {
      const res = nllLoss(gpu, { logp: t.logp, mask: t.mask, seqStarts: t.seqStarts }, { agg, normLength: 64 });
      await expectMatches(gpu, res, policyLossRef({ logp: x.logp, logpOld: x.logpOld, advantages: x.adv, mask: x.mask, seqStarts: x.starts }, { ...base, agg, normLength: 64, nll: true }));
    }
  });

  it('NLL gradients known before logp equal nllLoss\'s, bit for bit, in every mode', async () => {
    const gpu = await testGpu();
    const t = upload(gpu, makeInputs(CASES[3]!));
    for (const agg of LOSS_AGG_MODES) {
      const o = { agg, normLength: 64, entropyCoef: 0.02, tokenTotal: 700 };
      const res = nllLoss(gpu, { logp: t.logp, mask: t.mask, seqStarts: t.seqStarts, entropy: t.entropy }, o);
      const known = nllLossGrads(gpu, { mask: t.mask, seqStarts: t.seqStarts, entropy: true }, o);
      const want = await gpu.readF32(res.dlogp);
      expect(want.some((v) => v !== 0)).toBe(true);
      expect(Array.from(await gpu.readF32(known.dlogp)), agg).toEqual(Array.from(want));
      expect(Array.from(await gpu.readF32(known.dentropy!)), agg).toEqual(Array.from(await gpu.readF32(res.dentropy!)));
    }
  });

  it('summarises per role with token weighting', async () => {
    const gpu = await testGpu();
    const x = makeInputs(CASES[1]!);
    const res = policyLoss(gpu, upload(gpu, x), { entropyCoef: 0.01 });
    const stats = await readSeqStats(gpu, res.stats);
    const s = summarizeByRole(stats, ['generator', 'evaluator', 'generator']);
    expect(s.generator!.sequences).toBe(2);
    expect(s.generator!.tokens).toBe(stats[0]!.tokens + stats[2]!.tokens);
    expect(s.generator!.clipFrac).toBeCloseTo((stats[0]!.clipped + stats[2]!.clipped) / (stats[0]!.tokens + stats[2]!.tokens), 6);
    expect(s.evaluator!.tokens).toBe(0);
    expect(() => summarizeByRole(stats, ['generator'])).toThrow(/3 sequences/);
  });

  it('refuses bad inputs with named errors', async () => {
    const gpu = await testGpu();
    const t = upload(gpu, makeInputs(CASES[1]!));
    const short = gpu.upload(new Float32Array([1, 2]), [2], 'f32', 'shortMask');
    expect(() => policyLoss(gpu, { ...t, mask: short })).toThrow(/shortMask/);
    expect(() => policyLoss(gpu, { ...t, refLogp: undefined }, { klCoef: 0.1 })).toThrow(LossError);
    expect(() => policyLoss(gpu, t, { agg: 'seq-mean-token-sum-norm' })).toThrow(/normLength/);
    expect(() => policyLoss(gpu, { ...t, seqStarts: [0, 3, 2, 305] })).toThrow(/seqStarts/);
    expect(() => policyLoss(gpu, t, { dualClip: 0.5 })).toThrow(/dual-clip/);
  });
});
