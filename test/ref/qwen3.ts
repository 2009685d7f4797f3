// CPU reference of the Qwen3ForCausalLM forward (f64 math on given f32 weights, HF names), for model tests.
import type { Qwen3Config } from '../../src/model/config.ts';
import { ropeTables } from '../../src/model/rope-table.ts';
import { rmsnormRef } from './rmsnorm.ts';
import { ropeRef } from './rope.ts';
import { swigluRef } from './swiglu.ts';

export type WeightMap = Map<string, Float32Array>;

/** y [T, out] = x [T, in] · Wᵀ, W [out, in]. */
function linear(x: Float64Array, w: Float32Array, inDim: number): Float64Array {
  const T = x.length / inDim;
  const out = w.length / inDim;
  const y = new Float64Array(T * out);
  for (let t = 0; t < T; t++) {
    for (let o = 0; o < out; o++) {
      let s = 0;
      for (let i = 0; i < inDim; i++) s += x[t * inDim + i]! * w[o * inDim + i]!;
      y[t * out + o] = s;
    }
  }
  return y;
}

/** Causal softmax attention within each sequence, GQA. */
function attention(q: Float64Array, k: Float64Array, v: Float64Array, seqLens: number[], c: Qwen3Config): Float64Array {
  const { numHeads: H, numKvHeads: KV, headDim: D } = c;
  const out = new Float64Array(q.length);
  const scale = 1 / Math.sqrt(D);
  let start = 0;
  for (const len of seqLens) {
    for (let i = 0; i < len; i++) {
      for (let h = 0; h < H; h++) {
        const g = Math.floor(h / (H / KV));
        const qi = ((start + i) * H + h) * D;
        const scores = new Float64Array(i + 1);
        let m = -Infinity;
        for (let j = 0; j <= i; j++) {
          const kj = ((start + j) * KV + g) * D;
          let s = 0;
          for (let d = 0; d < D; d++) s += q[qi + d]! * k[kj + d]!;
          scores[j] = s * scale;
          m = Math.max(m, scores[j]!);
        }
        let sum = 0;
        for (let j = 0; j <= i; j++) sum += scores[j] = Math.exp(scores[j]! - m);
        for (let j = 0; j <= i; j++) {
          const vj = ((start + j) * KV + g) * D;
          for (let d = 0; d < D; d++) out[qi + d]! += (scores[j]! / sum) * v[vj + d]!;
        }
      }
    }
    start += len;
  }
  return out;
}

/** Logits [T, vocab] of packed sequences (positions 0..len-1 each). */
export function qwen3Ref(c: Qwen3Config, w: WeightMap, ids: ArrayLike<number>, seqLens: number[]): Float64Array {
  const get = (name: string) => {
    const t = w.get(name);
    if (!t) throw new Error(`qwen3Ref: missing ${name}`);
    return t;
  };
  const Hd = c.hiddenSize;
  const T = ids.length;
  const positions = new Uint32Array(T);
  let s0 = 0;
  for (const len of seqLens) for (let i = 0; i < len; i++) positions[s0++] = i;
  const { cos, sin } = ropeTables(c.headDim, c.ropeTheta, Math.max(...seqLens));
  const embed = get('model.embed_tokens.weight');
  let x = new Float64Array(T * Hd);
  for (let t = 0; t < T; t++) for (let i = 0; i < Hd; i++) x[t * Hd + i] = embed[ids[t]! * Hd + i]!;
  for (let l = 0; l < c.numLayers; l++) {
    const p = `model.layers.${l}.`;
    const n = rmsnormRef(x, get(`${p}input_layernorm.weight`), c.rmsNormEps).y;
    let q = linear(n, get(`${p}self_attn.q_proj.weight`), Hd);
    let k = linear(n, get(`${p}self_attn.k_proj.weight`), Hd);
    const v = linear(n, get(`${p}self_attn.v_proj.weight`), Hd);
    q = ropeRef(rmsnormRef(q, get(`${p}self_attn.q_norm.weight`), c.rmsNormEps).y, c.numHeads, c.headDim, positions, cos, sin);
    k = ropeRef(rmsnormRef(k, get(`${p}self_attn.k_norm.weight`), c.rmsNormEps).y, c.numKvHeads, c.headDim, positions, cos, sin);
    const o = linear(attention(q, k, v, seqLens, c), get(`${p}self_attn.o_proj.weight`), c.numHeads * c.headDim);
    x = x.map((a, i) => a + o[i]!);
    const m = rmsnormRef(x, get(`${p}post_attention_layernorm.weight`), c.rmsNormEps).y;
    const act = swigluRef(linear(m, get(`${p}mlp.gate_proj.weight`), Hd), linear(m, get(`${p}mlp.up_proj.weight`), Hd));
    const d = linear(act, get(`${p}mlp.down_proj.weight`), c.intermediateSize);
    x = x.map((a, i) => a + d[i]!);
  }
  const xn = rmsnormRef(x, get('model.norm.weight'), c.rmsNormEps).y;
  return linear(xn, c.tieWordEmbeddings ? embed : get('lm_head.weight'), Hd);
}
