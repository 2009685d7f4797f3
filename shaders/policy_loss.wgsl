// GRPO/PPO clipped policy loss (verl semantics) and token NLL, over tokens of S packed sequences.
// Three passes, deterministic (fixed-order tree reductions, no atomics):
//   token_terms: one workgroup per sequence; per token the loss ℓ and dℓ/dlogp (into dlogp, unweighted),
//                per-sequence sums into stats[s, 0..8];
//   aggregate:   one workgroup; totals, the per-token weight of each sequence (aggregation mode), the loss;
//   token_grads: one workgroup per sequence; dlogp = weight·mask·dℓ/dlogp, dentropy = −entropy_coef·weight·mask.
// ℓ = pg + kl_coef·k3(ref, logp) − entropy_coef·H. Gradients as torch autograd: clamp passes on [lo, hi],
// maximum/minimum split ties in half.
struct Params {
  n_seqs: u32,
  objective: u32,     // 0: policy gradient, 1: token NLL (ℓ = −logp)
  adv_per_seq: u32,   // advantages indexed by sequence (1) or by token (0)
  has_ref: u32,
  has_entropy: u32,
  dual_clip_on: u32,
  agg: u32,           // 0 token-mean, 1 seq-mean-token-mean, 2 seq-mean-token-sum, 3 seq-mean-token-sum-norm
  _pad: u32,
  clip_low: f32,
  clip_high: f32,
  dual_clip: f32,
  kl_coef: f32,
  entropy_coef: f32,
  norm_length: f32,
  token_total: f32,   // > 0: divide by this token count instead of this batch's (micro-batches)
  seq_total: f32,     // > 0: likewise for the sequence count
}

const WG = 256u;
const NSTAT = 9u; // loss, tokens, pg, clipped, dual_clipped, ratio, ppo_kl, ref_kl, entropy

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> logp: array<f32>;
@group(0) @binding(2) var<storage, read> logp_old: array<f32>;
@group(0) @binding(3) var<storage, read> adv: array<f32>;
@group(0) @binding(4) var<storage, read> mask: array<f32>;
@group(0) @binding(5) var<storage, read> seq_starts: array<u32>;
@group(0) @binding(6) var<storage, read> ref_logp: array<f32>;
@group(0) @binding(7) var<storage, read> entropy: array<f32>;
@group(0) @binding(8) var<storage, read_write> dlogp: array<f32>;
@group(0) @binding(9) var<storage, read_write> dentropy: array<f32>;
@group(0) @binding(10) var<storage, read_write> stats: array<f32>;
@group(0) @binding(11) var<storage, read_write> seq_weight: array<f32>;
@group(0) @binding(12) var<storage, read_write> loss: array<f32>;

var<workgroup> r0: array<f32, WG>;
var<workgroup> r1: array<f32, WG>;
var<workgroup> r2: array<f32, WG>;
var<workgroup> r3: array<f32, WG>;
var<workgroup> r4: array<f32, WG>;
var<workgroup> r5: array<f32, WG>;
var<workgroup> r6: array<f32, WG>;
var<workgroup> r7: array<f32, WG>;
var<workgroup> r8: array<f32, WG>;

fn seq_index(wid: vec3u, nwg: vec3u) -> u32 { return wid.x + wid.y * nwg.x; }

fn clamp_grad(x: f32, lo: f32, hi: f32) -> f32 { return select(0.0, 1.0, x >= lo && x <= hi); }

// Gradient through maximum(a, b) (or minimum with the roles swapped): the larger side's, halves on a tie.
fn pick_grad(a: f32, b: f32, ga: f32, gb: f32) -> f32 {
  if (a > b) { return ga; }
  if (a < b) { return gb; }
  return 0.5 * (ga + gb);
}

// Sums r0..r8 over the workgroup in a fixed order; the result is in element 0.
fn reduce_stats(lid: u32) {
  for (var stride = WG / 2u; stride > 0u; stride = stride / 2u) {
    workgroupBarrier();
    if (lid < stride) {
      r0[lid] += r0[lid + stride];
      r1[lid] += r1[lid + stride];
      r2[lid] += r2[lid + stride];
      r3[lid] += r3[lid + stride];
      r4[lid] += r4[lid + stride];
      r5[lid] += r5[lid + stride];
      r6[lid] += r6[lid + stride];
      r7[lid] += r7[lid + stride];
      r8[lid] += r8[lid + stride];
    }
  }
  workgroupBarrier();
}

@compute @workgroup_size(WG)
fn token_terms(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let s = seq_index(wid, nwg);
  let live = s < p.n_seqs; // uniform per workgroup: the whole group returns together below
  var s_loss = 0.0; var s_tok = 0.0; var s_pg = 0.0; var s_clip = 0.0; var s_dual = 0.0;
  var s_ratio = 0.0; var s_ppokl = 0.0; var s_refkl = 0.0; var s_ent = 0.0;
  if (live) {
    let start = seq_starts[s];
    let end = seq_starts[s + 1u];
    for (var t = start + lid; t < end; t += WG) {
      let m = mask[t];
      var g = 0.0;
      if (m != 0.0) {
        var h = 0.0;
        if (p.has_entropy != 0u) { h = entropy[t]; }
        var l = 0.0;
        if (p.objective == 1u) {
          l = -logp[t];
          g = -1.0;
          s_pg += m * l;
        } else {
          var a: f32;
          if (p.adv_per_seq != 0u) { a = adv[s]; } else { a = adv[t]; }
          let d = logp[t] - logp_old[t];
          let dc = clamp(d, -20.0, 20.0);
          let r = exp(dc);
          let dr = r * clamp_grad(d, -20.0, 20.0);
          let rc = clamp(r, 1.0 - p.clip_low, 1.0 + p.clip_high);
          let pg1 = -a * r;
          let pg2 = -a * rc;
          let clip1 = max(pg1, pg2);
          let g_clip1 = pick_grad(pg1, pg2, -a * dr, -a * dr * clamp_grad(r, 1.0 - p.clip_low, 1.0 + p.clip_high));
          var pg = clip1;
          var gpg = g_clip1;
          if (p.dual_clip_on != 0u && a < 0.0) {
            let pg3 = -a * p.dual_clip;
            pg = min(pg3, clip1);
            gpg = pick_grad(pg3, clip1, g_clip1, 0.0);
            if (clip1 > pg3) { s_dual += m; }
          }
          if (pg2 > pg1) { s_clip += m; }
          l = pg;
          g = gpg;
          s_pg += m * pg;
          s_ratio += m * r;
          s_ppokl -= m * dc;
          if (p.has_ref != 0u) {
            let kd = ref_logp[t] - logp[t];
            let kc = clamp(kd, -20.0, 20.0);
            let k = exp(kc) - kc - 1.0;
            let kk = clamp(k, -10.0, 10.0);
            l += p.kl_coef * kk;
            g -= p.kl_coef * (exp(kc) - 1.0) * clamp_grad(kd, -20.0, 20.0) * clamp_grad(k, -10.0, 10.0);
            s_refkl += m * kk;
          }
        }
        l -= p.entropy_coef * h;
        s_ent += m * h;
        s_loss += m * l;
        s_tok += m;
      }
      dlogp[t] = g;
    }
  }
  r0[lid] = s_loss; r1[lid] = s_tok; r2[lid] = s_pg; r3[lid] = s_clip; r4[lid] = s_dual;
  r5[lid] = s_ratio; r6[lid] = s_ppokl; r7[lid] = s_refkl; r8[lid] = s_ent;
  reduce_stats(lid);
  if (live && lid == 0u) {
    let o = s * NSTAT;
    stats[o] = r0[0]; stats[o + 1u] = r1[0]; stats[o + 2u] = r2[0]; stats[o + 3u] = r3[0]; stats[o + 4u] = r4[0];
    stats[o + 5u] = r5[0]; stats[o + 6u] = r6[0]; stats[o + 7u] = r7[0]; stats[o + 8u] = r8[0];
  }
}

fn weight_of(tokens: f32, total_tokens: f32, total_seqs: f32) -> f32 {
  var w = 1.0 / p.norm_length; // seq-mean-token-sum-norm
  switch p.agg {
    case 0u: { w = select(0.0, 1.0 / total_tokens, total_tokens > 0.0); }
    case 1u: { w = select(0.0, 1.0 / (tokens * total_seqs), tokens > 0.0 && total_seqs > 0.0); }
    case 2u: { w = select(0.0, 1.0 / total_seqs, total_seqs > 0.0); }
    default: {}
  }
  return w;
}

@compute @workgroup_size(WG)
fn aggregate(@builtin(local_invocation_index) lid: u32) {
  var tok = 0.0;
  var seqs = 0.0;
  for (var s = lid; s < p.n_seqs; s += WG) {
    let n = stats[s * NSTAT + 1u];
    tok += n;
    seqs += select(0.0, 1.0, n > 0.0);
  }
  r0[lid] = tok; r1[lid] = seqs;
  r2[lid] = 0.0; r3[lid] = 0.0; r4[lid] = 0.0; r5[lid] = 0.0; r6[lid] = 0.0; r7[lid] = 0.0; r8[lid] = 0.0;
  reduce_stats(lid);
  let total_tokens = select(r0[0], p.token_total, p.token_total > 0.0);
  let total_seqs = select(r1[0], p.seq_total, p.seq_total > 0.0);
  workgroupBarrier();
  var l = 0.0;
  for (var s = lid; s < p.n_seqs; s += WG) {
    let w = weight_of(stats[s * NSTAT + 1u], total_tokens, total_seqs);
    seq_weight[s] = w;
    l += w * stats[s * NSTAT];
  }
  r0[lid] = l; r1[lid] = 0.0;
  reduce_stats(lid);
  if (lid == 0u) { loss[0] = r0[0]; }
}

@compute @workgroup_size(WG)
fn token_grads(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let s = seq_index(wid, nwg);
  if (s >= p.n_seqs) { return; }
  let w = seq_weight[s];
  for (var t = seq_starts[s] + lid; t < seq_starts[s + 1u]; t += WG) {
    let wm = w * mask[t];
    dlogp[t] = wm * dlogp[t];
    if (p.has_entropy != 0u) { dentropy[t] = -p.entropy_coef * wm; }
  }
}
