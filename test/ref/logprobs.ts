// CPU reference for shaders/logprobs.wgsl (f64): per row log-softmax at temperature tau.
export function logprobsRef(
  logits: ArrayLike<number>,
  vocab: number,
  targets: ArrayLike<number>,
  tau = 1,
): { logp: Float64Array; entropy: Float64Array; lse: Float64Array } {
  const rows = logits.length / vocab;
  const logp = new Float64Array(rows);
  const entropy = new Float64Array(rows);
  const lse = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    let m = -Infinity;
    for (let j = 0; j < vocab; j++) m = Math.max(m, logits[r * vocab + j]! / tau);
    let s = 0;
    for (let j = 0; j < vocab; j++) s += Math.exp(logits[r * vocab + j]! / tau - m);
    const l = m + Math.log(s);
    let h = 0;
    for (let j = 0; j < vocab; j++) {
      const lp = logits[r * vocab + j]! / tau - l;
      h -= Math.exp(lp) * lp;
    }
    lse[r] = l;
    logp[r] = logits[r * vocab + targets[r]!]! / tau - l;
    entropy[r] = h;
  }
  return { logp, entropy, lse };
}

/** d(Σ dlogp·logp + Σ dentropy·entropy) / d logits, analytic. */
export function logprobsBackwardRef(
  logits: ArrayLike<number>,
  vocab: number,
  targets: ArrayLike<number>,
  dlogp: ArrayLike<number>,
  dentropy: ArrayLike<number> | null,
  tau = 1,
): Float64Array {
  const { entropy, lse } = logprobsRef(logits, vocab, targets, tau);
  const out = new Float64Array(logits.length);
  for (let r = 0; r < logits.length / vocab; r++) {
    for (let j = 0; j < vocab; j++) {
      const lp = logits[r * vocab + j]! / tau - lse[r]!;
      const p = Math.exp(lp);
      let d = -dlogp[r]! * p - (dentropy ? dentropy[r]! : 0) * p * (lp + entropy[r]!);
      if (j === targets[r]) d += dlogp[r]!;
      out[r * vocab + j] = d / tau;
    }
  }
  return out;
}
