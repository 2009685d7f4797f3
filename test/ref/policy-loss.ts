// CPU reference (f64) for shaders/policy_loss.wgsl: verl's PPO/GRPO clipped policy loss with dual clip,
// k3 ("low_var_kl") KL to a reference policy, entropy bonus, its four aggregation modes, and token NLL.
// Gradients follow torch autograd exactly: clamp passes the gradient on [lo, hi] inclusive,
// maximum/minimum split it in half on ties.
import type { LossAggMode } from '../../src/rl/loss.ts';

export interface PolicyLossRefInput {
  logp: ArrayLike<number>;
  logpOld: ArrayLike<number>;
  /** per token [T] */
  advantages: ArrayLike<number>;
  mask: ArrayLike<number>;
  seqStarts: ArrayLike<number>;
  refLogp?: ArrayLike<number>;
  entropy?: ArrayLike<number>;
}

export interface PolicyLossRefOptions {
  clipLow: number;
  clipHigh: number;
  dualClip: number | null;
  klCoef: number;
  entropyCoef: number;
  agg: LossAggMode;
  normLength: number;
  tokenTotal?: number;
  seqTotal?: number;
  nll?: boolean;
}

export interface SeqStatsRef {
  lossSum: number;
  tokens: number;
  pgSum: number;
  clipped: number;
  dualClipped: number;
  ratioSum: number;
  ppoKlSum: number;
  refKlSum: number;
  entropySum: number;
}

const clampGrad = (x: number, lo: number, hi: number) => (x >= lo && x <= hi ? 1 : 0);

export function policyLossRef(inp: PolicyLossRefInput, o: PolicyLossRefOptions) {
  const S = inp.seqStarts.length - 1;
  const T = inp.logp.length;
  const g = new Float64Array(T); // d ℓ_t / d logp_t before aggregation weights
  const stats: SeqStatsRef[] = [];
  for (let s = 0; s < S; s++) {
    const st: SeqStatsRef = { lossSum: 0, tokens: 0, pgSum: 0, clipped: 0, dualClipped: 0, ratioSum: 0, ppoKlSum: 0, refKlSum: 0, entropySum: 0 };
    for (let t = inp.seqStarts[s]!; t < inp.seqStarts[s + 1]!; t++) {
      const m = inp.mask[t]!;
      if (m === 0) continue;
      const H = inp.entropy ? inp.entropy[t]! : 0;
      let loss: number;
      let grad: number;
      if (o.nll) {
        loss = -inp.logp[t]!;
        grad = -1;
        st.pgSum += m * loss;
      } else {
        const A = inp.advantages[t]!;
        const d = inp.logp[t]! - inp.logpOld[t]!;
        const dc = Math.min(20, Math.max(-20, d));
        const r = Math.exp(dc);
        const dr = r * clampGrad(d, -20, 20);
        const rc = Math.min(1 + o.clipHigh, Math.max(1 - o.clipLow, r));
        const pg1 = -A * r;
        const pg2 = -A * rc;
        const g1 = -A * dr;
        const g2 = -A * dr * clampGrad(r, 1 - o.clipLow, 1 + o.clipHigh);
        const clip1 = Math.max(pg1, pg2);
        const gClip1 = pg1 > pg2 ? g1 : pg1 < pg2 ? g2 : 0.5 * (g1 + g2);
        let pg = clip1;
        let gpg = gClip1;
        if (o.dualClip !== null && A < 0) {
          const pg3 = -A * o.dualClip;
          pg = Math.min(pg3, clip1);
          gpg = clip1 < pg3 ? gClip1 : clip1 > pg3 ? 0 : 0.5 * gClip1;
          if (clip1 > pg3) st.dualClipped += m;
        }
        if (pg2 > pg1) st.clipped += m;
        loss = pg;
        grad = gpg;
        st.pgSum += m * pg;
        st.ratioSum += m * r;
        st.ppoKlSum += m * -dc;
        if (inp.refLogp) {
          const kd = inp.refLogp[t]! - inp.logp[t]!;
          const kc = Math.min(20, Math.max(-20, kd));
          const k = Math.exp(kc) - kc - 1;
          const kk = Math.min(10, Math.max(-10, k));
          // d k / d logp = (exp(kc) − 1)·(−1) through both clamps
          const gk = -(Math.exp(kc) - 1) * clampGrad(kd, -20, 20) * clampGrad(k, -10, 10);
          loss += o.klCoef * kk;
          grad += o.klCoef * gk;
          st.refKlSum += m * kk;
        }
      }
      loss -= o.entropyCoef * H;
      st.entropySum += m * H;
      st.lossSum += m * loss;
      st.tokens += m;
      g[t] = grad;
    }
    stats.push(st);
  }
  const tokens = o.tokenTotal ?? stats.reduce((a, s) => a + s.tokens, 0);
  const seqs = o.seqTotal ?? stats.filter((s) => s.tokens > 0).length;
  const weight = stats.map((st) => {
    switch (o.agg) {
      case 'token-mean':
        return tokens > 0 ? 1 / tokens : 0;
      case 'seq-mean-token-mean':
        return st.tokens > 0 && seqs > 0 ? 1 / (st.tokens * seqs) : 0;
      case 'seq-mean-token-sum':
        return seqs > 0 ? 1 / seqs : 0;
      case 'seq-mean-token-sum-norm':
        return 1 / o.normLength;
    }
  });
  let loss = 0;
  const dlogp = new Float64Array(T);
  const dentropy = new Float64Array(T);
  for (let s = 0; s < S; s++) {
    loss += weight[s]! * stats[s]!.lossSum;
    for (let t = inp.seqStarts[s]!; t < inp.seqStarts[s + 1]!; t++) {
      const m = inp.mask[t]!;
      if (m === 0) continue;
      dlogp[t] = weight[s]! * m * g[t]!;
      dentropy[t] = -o.entropyCoef * weight[s]! * m;
    }
  }
  return { loss, dlogp, dentropy, stats };
}
