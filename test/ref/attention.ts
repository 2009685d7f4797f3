// CPU references (f64) for causal attention over packed sequences, its backward, and paged attention.
import { roundF16 } from '../../src/gpu/dtype.ts';
export interface RefDims {
  nHeads: number;
  nKv: number;
  headDim: number;
  scale?: number;
}

const sc = (d: RefDims) => d.scale ?? 1 / Math.sqrt(d.headDim);

/** Plain softmax attention, causal within each sequence. Returns o [T, nH, hd] and lse [T, nH]. */
export function attentionRef(q: Float32Array, k: Float32Array, v: Float32Array, seqStarts: number[], d: RefDims) {
  const { nHeads: H, nKv, headDim: D } = d;
  const T = seqStarts[seqStarts.length - 1]!;
  const G = H / nKv;
  const o = new Float64Array(T * H * D);
  const lse = new Float64Array(T * H);
  for (let s = 0; s + 1 < seqStarts.length; s++) {
    const a = seqStarts[s]!;
    for (let t = a; t < seqStarts[s + 1]!; t++) {
      for (let h = 0; h < H; h++) {
        const kh = Math.floor(h / G);
        const scores: number[] = [];
        for (let j = a; j <= t; j++) {
          let dot = 0;
          for (let x = 0; x < D; x++) dot += q[(t * H + h) * D + x]! * k[(j * nKv + kh) * D + x]!;
          scores.push(dot * sc(d));
        }
        const m = Math.max(...scores);
        const e = scores.map((x) => Math.exp(x - m));
        const sum = e.reduce((x, y) => x + y, 0);
        lse[t * H + h] = m + Math.log(sum);
        for (let j = a; j <= t; j++) {
          const w = e[j - a]! / sum;
          for (let x = 0; x < D; x++) o[(t * H + h) * D + x] += w * v[(j * nKv + kh) * D + x]!;
        }
      }
    }
  }
  return { o, lse };
}

/** Analytic gradients of sum(o ⊙ dO) for attentionRef. */
export function attentionBackwardRef(q: Float32Array, k: Float32Array, v: Float32Array, dO: Float32Array, seqStarts: number[], d: RefDims) {
  const { nHeads: H, nKv, headDim: D } = d;
  const T = seqStarts[seqStarts.length - 1]!;
  const G = H / nKv;
  const s0 = sc(d);
  const dq = new Float64Array(T * H * D);
  const dk = new Float64Array(T * nKv * D);
  const dv = new Float64Array(T * nKv * D);
  for (let s = 0; s + 1 < seqStarts.length; s++) {
    const a = seqStarts[s]!;
    for (let t = a; t < seqStarts[s + 1]!; t++) {
      for (let h = 0; h < H; h++) {
        const kh = Math.floor(h / G);
        const qi = (t * H + h) * D;
        const scores: number[] = [];
        for (let j = a; j <= t; j++) {
          let dot = 0;
          for (let x = 0; x < D; x++) dot += q[qi + x]! * k[(j * nKv + kh) * D + x]!;
          scores.push(dot * s0);
        }
        const m = Math.max(...scores);
        const e = scores.map((x) => Math.exp(x - m));
        const sum = e.reduce((x, y) => x + y, 0);
        const P = e.map((x) => x / sum);
        const dP = P.map((_, i) => {
          let dot = 0;
          for (let x = 0; x < D; x++) dot += dO[qi + x]! * v[((a + i) * nKv + kh) * D + x]!;
          return dot;
        });
        const Dsum = P.reduce((acc, p, i) => acc + p * dP[i]!, 0);
        P.forEach((p, i) => {
          const j = a + i;
          const ds = p * (dP[i]! - Dsum) * s0;
          for (let x = 0; x < D; x++) {
            dv[(j * nKv + kh) * D + x] += p * dO[qi + x]!;
            dq[qi + x] += ds * k[(j * nKv + kh) * D + x]!;
            dk[(j * nKv + kh) * D + x] += ds * q[qi + x]!;
          }
        });
      }
    }
  }
  return { dq, dk, dv };
}

/** Paged attention from a flat view: per sequence, cached K/V rows [len, nKv, hd] and queries at positions. */
export function pagedRef(
  q: Float32Array,
  seqs: { k: Float32Array; v: Float32Array; positions: number[] }[],
  d: RefDims,
): Float64Array {
  const { nHeads: H, nKv, headDim: D } = d;
  const G = H / nKv;
  const Tq = seqs.reduce((a, s) => a + s.positions.length, 0);
  const o = new Float64Array(Tq * H * D);
  let t = 0;
  for (const s of seqs) {
    for (const pos of s.positions) {
      for (let h = 0; h < H; h++) {
        const kh = Math.floor(h / G);
        const scores: number[] = [];
        for (let j = 0; j <= pos; j++) {
          let dot = 0;
          for (let x = 0; x < D; x++) dot += q[(t * H + h) * D + x]! * s.k[(j * nKv + kh) * D + x]!;
          scores.push(dot * sc(d));
        }
        const m = Math.max(...scores);
        const e = scores.map((x) => Math.exp(x - m));
        const sum = e.reduce((x, y) => x + y, 0);
        for (let j = 0; j <= pos; j++) {
          for (let x = 0; x < D; x++) o[(t * H + h) * D + x] += (e[j]! / sum) * s.v[(j * nKv + kh) * D + x]!;
        }
      }
      t++;
    }
  }
  return o;
}

/** attentionRef with the roundings of the tensor-core kernel (shaders/attention_prefill_tc.wgsl): q·scale·log2(e),
 *  k and v rounded to f16, each probability rounded to f16 after its division by the row's sum; sums in f64. A GPU
 *  result differs from it by f32 accumulation order and exp2's error (and a probability that rounds the other way). */
export function attentionTcRef(q: Float32Array, k: Float32Array, v: Float32Array, seqStarts: number[], d: RefDims) {
  const { nHeads: H, nKv, headDim: D } = d;
  const T = seqStarts[seqStarts.length - 1]!;
  const G = H / nKv;
  const scale2 = Math.fround(sc(d) * Math.LOG2E);
  const qh = roundF16(Float32Array.from(q, (x) => Math.fround(x * scale2)));
  const [kh, vh] = [roundF16(k), roundF16(v)];
  const o = new Float64Array(T * H * D);
  const lse = new Float64Array(T * H);
  for (let s = 0; s + 1 < seqStarts.length; s++) {
    const a = seqStarts[s]!;
    for (let t = a; t < seqStarts[s + 1]!; t++) {
      for (let h = 0; h < H; h++) {
        const kvh = Math.floor(h / G);
        const scores: number[] = [];
        for (let j = a; j <= t; j++) {
          let dot = 0;
          for (let x = 0; x < D; x++) dot += qh[(t * H + h) * D + x]! * kh[(j * nKv + kvh) * D + x]!;
          scores.push(dot);
        }
        const m = Math.max(...scores);
        const sum = scores.reduce((acc, x) => acc + 2 ** (x - m), 0);
        lse[t * H + h] = (m + Math.log2(sum)) * Math.LN2;
        const p = roundF16(scores.map((x) => 2 ** (x - m) / sum));
        for (let j = a; j <= t; j++) {
          for (let x = 0; x < D; x++) o[(t * H + h) * D + x] += p[j - a]! * vh[(j * nKv + kvh) * D + x]!;
        }
      }
    }
  }
  return { o, lse };
}

/** attentionBackwardRef with the roundings of the tensor-core kernels (shaders/attention_backward_tc.wgsl): each
 *  sequence's dO times its power of two w (largest entry into [1, 2)), then q, k, v and that dO rounded to f16, P and
 *  dS' = P·(dP' − D') rounded to f16 where they enter a product; the probabilities from the given lse and D from
 *  the given o, as the kernels take them; sums in f64. */
export function attentionBackwardTcRef(q: Float32Array, k: Float32Array, v: Float32Array, o: ArrayLike<number>, lse: ArrayLike<number>, dO: Float32Array, seqStarts: number[], d: RefDims) {
  const { nHeads: H, nKv, headDim: D } = d;
  const T = seqStarts[seqStarts.length - 1]!;
  const G = H / nKv;
  const scale = sc(d);
  const scale2 = Math.fround(scale * Math.LOG2E);
  const [qh, kh, vh] = [roundF16(q), roundF16(k), roundF16(v)];
  const w = new Float64Array(T);
  const scaledDo = new Float32Array(dO.length);
  for (let s = 0; s + 1 < seqStarts.length; s++) {
    const [a, b] = [seqStarts[s]!, seqStarts[s + 1]!];
    let mx = 0;
    for (let i = a * H * D; i < b * H * D; i++) mx = Math.max(mx, Math.abs(dO[i]!));
    // as the shader's `scales`: from the exponent bits of the largest |dO| as an f32
    const e = ((new Uint32Array(new Float32Array([mx]).buffer)[0]! >>> 23) & 0xff) - 127;
    const ws = 2 ** Math.min(Math.max(-e, -126), 120);
    for (let t = a; t < b; t++) w[t] = ws;
    for (let i = a * H * D; i < b * H * D; i++) scaledDo[i] = dO[i]! * ws;
  }
  const gh = roundF16(scaledDo);
  const dq = new Float64Array(T * H * D);
  const dk = new Float64Array(T * nKv * D);
  const dv = new Float64Array(T * nKv * D);
  for (let s = 0; s + 1 < seqStarts.length; s++) {
    const a = seqStarts[s]!;
    for (let t = a; t < seqStarts[s + 1]!; t++) {
      for (let h = 0; h < H; h++) {
        const kvh = Math.floor(h / G);
        const row = (t * H + h) * D;
        let dRow = 0;
        for (let x = 0; x < D; x++) dRow += dO[row + x]! * o[row + x]!;
        const dScaled = Math.fround(dRow) * w[t]!;
        const lse2 = Math.fround(lse[t * H + h]! * Math.LOG2E);
        for (let j = a; j <= t; j++) {
          const kr = (j * nKv + kvh) * D;
          let sc0 = 0;
          let dp = 0;
          for (let x = 0; x < D; x++) {
            sc0 += qh[row + x]! * kh[kr + x]!;
            dp += vh[kr + x]! * gh[row + x]!;
          }
          const pr = 2 ** (sc0 * scale2 - lse2);
          const rounded = roundF16([pr, pr * (dp - dScaled)]);
          const [p16, ds16] = [rounded[0]!, rounded[1]!];
          for (let x = 0; x < D; x++) {
            dv[kr + x] += (p16 * gh[row + x]!) / w[t]!;
            dk[kr + x] += (scale * ds16 * qh[row + x]!) / w[t]!;
            dq[row + x] += (scale * ds16 * kh[kr + x]!) / w[t]!;
          }
        }
      }
    }
  }
  return { dq, dk, dv };
}
