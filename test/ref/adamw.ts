// CPU reference (f64) for src/optim/adamw.ts: torch.optim.AdamW's single-tensor step and
// torch.nn.utils.clip_grad_norm_ over a parameter group.

export interface AdamWRefState {
  params: Float64Array[];
  m: Float64Array[];
  v: Float64Array[];
  step: number;
}

export function adamwRefInit(params: ArrayLike<number>[]): AdamWRefState {
  return { params: params.map((p) => Float64Array.from(p)), m: params.map((p) => new Float64Array(p.length)), v: params.map((p) => new Float64Array(p.length)), step: 0 };
}

export function gradNormRef(grads: ArrayLike<number>[]): number {
  let s = 0;
  for (const g of grads) for (let i = 0; i < g.length; i++) s += g[i]! * g[i]!;
  return Math.sqrt(s);
}

/** One step: clip (maxNorm null: none), then AdamW. Returns the norm before clipping. */
export function adamwRefStep(
  st: AdamWRefState,
  grads: ArrayLike<number>[],
  o: { lr: number; beta1: number; beta2: number; eps: number; weightDecay: number; maxNorm: number | null },
): number {
  const norm = gradNormRef(grads);
  const coef = o.maxNorm === null ? 1 : Math.min(1, o.maxNorm / (norm + 1e-6));
  st.step++;
  const bc1 = 1 - o.beta1 ** st.step;
  const bc2sqrt = Math.sqrt(1 - o.beta2 ** st.step);
  st.params.forEach((p, k) => {
    const m = st.m[k]!;
    const v = st.v[k]!;
    const g = grads[k]!;
    for (let i = 0; i < p.length; i++) {
      const gi = g[i]! * coef;
      p[i] = p[i]! * (1 - o.lr * o.weightDecay);
      m[i] = m[i]! + (1 - o.beta1) * (gi - m[i]!);
      v[i] = v[i]! * o.beta2 + (1 - o.beta2) * gi * gi;
      p[i] = p[i]! - (o.lr / bc1) * (m[i]! / (Math.sqrt(v[i]!) / bc2sqrt + o.eps));
    }
  });
  return norm;
}
