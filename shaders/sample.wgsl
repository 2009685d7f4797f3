// Token sampling on the GPU: one workgroup per row of logits [rows, V].
// Each row has its own temperature (0 = greedy), top-p and seeded random stream, so a row's draw
// depends only on (seed, stream, step) and its logits, never on the rest of the batch.
// Top-p without sorting: bisection on a logit threshold t, keeping tokens with z >= t, where
// mass(t) = sum over kept of exp(z - max) first reaches top_p of the total.
// The log-probability returned is log softmax(logits / T) of the chosen token over the full
// vocabulary (what GRPO recomputes as logp_old); greedy rows use T = 1. The entropy of that same
// distribution is returned too (per-role entropy is an early sign of collapse).
// Two paths, chosen per row by its top_p alone (so a row's draw never depends on the rest of the batch):
//   top_p < 1: `main`, one workgroup a row (the bisection needs the whole row's mass at every step);
//   top_p = 1: `chunks` then `finish`. `chunks` reads the row once, CHUNK tokens a workgroup, all chunks of all rows at
//     once, and keeps each chunk's max, its lowest index, Σ exp(z − m_c) and Σ exp(z − m_c)·(z − m_c); `finish` (a
//     workgroup a row) joins them into the row's max, mass and entropy, finds the chunk the draw falls in and walks
//     only that one. One workgroup a row read the row 3 times at 1.7 GB/s for a single row (2026-12-03, H200).
// Tokens with z = −inf (masked logits) carry no mass and no entropy.

struct Params { vocab: u32, rows: u32, skipFull: u32, _p1: u32 }
// Per row: temperature (f32 bits), top_p (f32 bits), seed, step. stream = seed's companion (row's own id).
struct RowParams { temperature: f32, top_p: f32, seed: u32, stream: u32, step: u32, _p0: u32, _p1: u32, _p2: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> logits: array<f32>;
@group(0) @binding(2) var<storage, read> row_params: array<RowParams>;
@group(0) @binding(3) var<storage, read_write> tokens: array<u32>;
@group(0) @binding(4) var<storage, read_write> logprobs: array<f32>;
@group(0) @binding(5) var<storage, read_write> entropies: array<f32>;
// Per (row, chunk): (max z, Σ exp(z − max), Σ exp(z − max)·(z − max), lowest index of the max as bits); `chunks` and
// `finish` only.
@group(0) @binding(6) var<storage, read_write> chunkStats: array<vec4f>;

const WG = 256u;
const BISECT_STEPS = 32u;
/** Loads a thread issues together in each pass over the row: with one workgroup a row, a batch of a few hundred
 * rows leaves most of the GPU's threads idle, so each needs several loads in flight. The tokens are still visited
 * one at a time in the order of a plain loop, so every sum is the same as that loop's. */
const UNROLL = 4u;

var<workgroup> red_f: array<f32, WG>;
var<workgroup> red_u: array<u32, WG>;
var<workgroup> chosen: u32;

fn pcg(v: u32) -> u32 {
  let s = v * 747796405u + 2891336453u;
  let w = ((s >> ((s >> 28u) + 4u)) ^ s) * 277803737u;
  return (w >> 22u) ^ w;
}

// Uniform in [0, 1) with 24 random bits.
fn uniform01(seed: u32, stream: u32, step: u32) -> f32 {
  let h = pcg(seed ^ pcg(stream ^ pcg(step)));
  return f32(h >> 8u) / 16777216.0;
}

const OP_MAX = 0u;
const OP_SUM = 1u;
const OP_MIN = 2u;

fn combine_f(a: f32, b: f32, op: u32) -> f32 { return select(a + b, max(a, b), op == OP_MAX); }
fn combine_u(a: u32, b: u32, op: u32) -> u32 { return select(max(a, b), min(a, b), op == OP_MIN); }

/** The workgroup's max (OP_MAX) or sum (OP_SUM) of v, the same in every thread: a uniform load, as the result
 * steers branches that contain barriers. */
fn reduce_f(lid: u32, v: f32, op: u32) -> f32 {
  red_f[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s >> 1u) {
    if (lid < s) { red_f[lid] = combine_f(red_f[lid], red_f[lid + s], op); }
    workgroupBarrier();
  }
  let r = workgroupUniformLoad(&red_f[0]);
  workgroupBarrier();
  return r;
}

fn reduce_max(lid: u32, v: f32) -> f32 { return reduce_f(lid, v, OP_MAX); }
fn reduce_sum(lid: u32, v: f32) -> f32 { return reduce_f(lid, v, OP_SUM); }

/** The workgroup's min (OP_MIN) or max (OP_MAX) of v, the same in every thread. */
fn reduce_u(lid: u32, v: u32, op: u32) -> u32 {
  red_u[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s >> 1u) {
    if (lid < s) { red_u[lid] = combine_u(red_u[lid], red_u[lid + s], op); }
    workgroupBarrier();
  }
  let r = workgroupUniformLoad(&red_u[0]);
  workgroupBarrier();
  return r;
}

/** z = logit · inv_t of the UNROLL tokens i0, i0 + step, …, loaded together (indices past the row read its last
 * token; callers skip them). */
fn zLoad(base: u32, i0: u32, step: u32, inv_t: f32) -> array<f32, UNROLL> {
  var z: array<f32, UNROLL>;
  for (var q = 0u; q < UNROLL; q++) { z[q] = logits[base + min(i0 + q * step, p.vocab - 1u)] * inv_t; }
  return z;
}

// Sum of exp(z - m) over tokens with z >= t (z = logit * inv_t), strided over the row.
fn mass_above(lid: u32, base: u32, inv_t: f32, m: f32, t: f32) -> f32 {
  var acc = 0.0;
  for (var i0 = lid; i0 < p.vocab; i0 += WG * UNROLL) {
    let z = zLoad(base, i0, WG, inv_t);
    for (var q = 0u; q < UNROLL; q++) {
      if (i0 + q * WG < p.vocab && z[q] >= t) { acc = acc + exp(z[q] - m); }
    }
  }
  return reduce_sum(lid, acc);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_id) lidv: vec3u) {
  let row = wid.x + wid.y * 65535u;
  if (row >= p.rows) { return; }
  let lid = lidv.x;
  let rp = row_params[row];
  if (p.skipFull != 0u && rp.top_p >= 1.0) { return; }  // `chunks` and `finish` take it
  let base = row * p.vocab;
  let greedy = rp.temperature <= 0.0;
  let inv_t = select(1.0 / rp.temperature, 1.0, greedy);

  // Max of z, and for greedy the lowest index attaining it.
  var best = -3.4e38;
  var best_i = 0xffffffffu;
  for (var i0 = lid; i0 < p.vocab; i0 += WG * UNROLL) {
    let z = zLoad(base, i0, WG, inv_t);
    for (var q = 0u; q < UNROLL; q++) {
      let i = i0 + q * WG;
      if (i < p.vocab && z[q] > best) { best = z[q]; best_i = i; }
    }
  }
  let m = reduce_max(lid, best);
  // Z = sum exp(z - m) (every token: the mass above no threshold) and, for H = log Z - E[z - m], sum exp(z - m) ·
  // (z - m), in one pass.
  var mass = 0.0;
  var zexp = 0.0;
  for (var i0 = lid; i0 < p.vocab; i0 += WG * UNROLL) {
    let z = zLoad(base, i0, WG, inv_t);
    for (var q = 0u; q < UNROLL; q++) {
      if (i0 + q * WG >= p.vocab) { continue; }
      let d = z[q] - m;
      let e = exp(d);
      if (z[q] >= -3.4e38) { mass = mass + e; }
      zexp = zexp + e * d;
    }
  }
  let total = reduce_sum(lid, mass);
  let entropy = log(total) - reduce_sum(lid, zexp) / total;

  if (greedy) {
    let tok = reduce_u(lid, select(0xffffffffu, best_i, best == m), OP_MIN);
    if (lid == 0u) {
      tokens[row] = tok;
      logprobs[row] = logits[base + tok] - m - log(total);
      entropies[row] = entropy;
    }
    return;
  }

  // Top-p threshold: largest t (to bisection precision) with mass_above(t) >= top_p * total.
  var lo = -3.4e38;
  if (rp.top_p < 1.0) {
    let need = rp.top_p * total;
    // Lowest z in the row bounds the search from below: mass there is the total.
    var low_z = 3.4e38;
    for (var i0 = lid; i0 < p.vocab; i0 += WG * UNROLL) {
      let z = zLoad(base, i0, WG, inv_t);
      for (var q = 0u; q < UNROLL; q++) { if (i0 + q * WG < p.vocab) { low_z = min(low_z, z[q]); } }
    }
    lo = -reduce_max(lid, -low_z);
    var hi = m;
    if (mass_above(lid, base, inv_t, m, hi) >= need) {
      lo = hi;
    } else {
      for (var it = 0u; it < BISECT_STEPS; it = it + 1u) {
        let mid = 0.5 * (lo + hi);
        if (mass_above(lid, base, inv_t, m, mid) >= need) { lo = mid; } else { hi = mid; }
      }
    }
  }
  // Without top-p every token is kept: the mass is Z (what mass_above would sum again, in the same order).
  var kept = total;
  if (rp.top_p < 1.0) { kept = mass_above(lid, base, inv_t, m, lo); }
  let goal = uniform01(rp.seed, rp.stream, rp.step) * kept;

  // Inverse CDF in index order: contiguous chunk per thread, exclusive prefix over threads,
  // then the thread whose chunk holds the goal walks it.
  let chunk = (p.vocab + WG - 1u) / WG;
  let start = min(lid * chunk, p.vocab);
  let end = min(start + chunk, p.vocab);
  var own = 0.0;
  for (var i0 = start; i0 < end; i0 += UNROLL) {
    let z = zLoad(base, i0, 1u, inv_t);
    for (var q = 0u; q < UNROLL; q++) {
      if (i0 + q < end && z[q] >= lo) { own = own + exp(z[q] - m); }
    }
  }
  red_f[lid] = own;
  if (lid == 0u) { chosen = 0xffffffffu; }
  workgroupBarrier();
  // Hillis-Steele inclusive scan over the 256 chunk sums.
  for (var s = 1u; s < WG; s = s << 1u) {
    var add = 0.0;
    if (lid >= s) { add = red_f[lid - s]; }
    workgroupBarrier();
    red_f[lid] = red_f[lid] + add;
    workgroupBarrier();
  }
  let before = red_f[lid] - own;
  if (goal >= before && goal < red_f[lid] && own > 0.0) {
    var acc = before;
    var pick = 0xffffffffu;
    var last_kept = start;
    for (var i0 = start; i0 < end; i0 += UNROLL) {
      let z = zLoad(base, i0, 1u, inv_t);
      for (var q = 0u; q < UNROLL; q++) {
        let i = i0 + q;
        if (i < end && z[q] >= lo) {
          acc = acc + exp(z[q] - m);
          last_kept = i;
          if (acc > goal && pick == 0xffffffffu) { pick = i; }
        }
      }
    }
    // Rounding can leave the goal just past the chunk's last kept token.
    chosen = select(pick, last_kept, pick == 0xffffffffu);
  }
  workgroupBarrier();
  if (lid == 0u) {
    var tok = chosen;
    if (tok == 0xffffffffu) {
      // goal fell past the final sum by rounding: take the last kept token.
      tok = 0u;
      for (var i = 0u; i < p.vocab; i = i + 1u) { if (logits[base + i] * inv_t >= lo) { tok = i; } }
    }
    tokens[row] = tok;
    logprobs[row] = logits[base + tok] * inv_t - m - log(total);
    entropies[row] = entropy;
  }
}

// ---- top_p = 1: `chunks`, then `finish` ----
const PER = 8u;                // tokens a thread of `chunks`, in registers between its passes
const CHUNK = WG * PER;        // tokens a chunk
const LOWEST = -3.4e38;        // below every finite z
const NONE = 0xffffffffu;

fn chunkCount() -> u32 { return (p.vocab + CHUNK - 1u) / CHUNK; }

/** Inclusive prefix sum over the workgroup of each thread's `own`, in thread order (Hillis-Steele). */
fn scan(lid: u32, own: f32) -> f32 {
  red_f[lid] = own;
  workgroupBarrier();
  for (var s = 1u; s < WG; s = s << 1u) {
    var add = 0.0;
    if (lid >= s) { add = red_f[lid - s]; }
    workgroupBarrier();
    red_f[lid] = red_f[lid] + add;
    workgroupBarrier();
  }
  let r = red_f[lid];
  workgroupBarrier();
  return r;
}

@compute @workgroup_size(WG)
fn chunks(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_id) lidv: vec3u) {
  let row = wid.y + wid.z * 65535u;
  if (row >= p.rows) { return; }
  let rp = row_params[row];
  if (rp.top_p < 1.0) { return; }
  let lid = lidv.x;
  let inv_t = select(1.0 / rp.temperature, 1.0, rp.temperature <= 0.0);
  let start = wid.x * CHUNK;
  let base = row * p.vocab;
  // Thread lid's tokens start + lid + k·WG (neighbouring threads, neighbouring words), all loads issued together.
  var z: array<f32, PER>;
  for (var k = 0u; k < PER; k++) {
    let i = start + lid + k * WG;
    z[k] = select(LOWEST, logits[base + min(i, p.vocab - 1u)] * inv_t, i < p.vocab);
  }
  var best = LOWEST;
  var best_i = NONE;
  for (var k = 0u; k < PER; k++) {
    if (z[k] > best) { best = z[k]; best_i = start + lid + k * WG; }
  }
  let m = reduce_max(lid, best);
  var mass = 0.0;
  var zexp = 0.0;
  for (var k = 0u; k < PER; k++) {
    if (z[k] >= LOWEST && start + lid + k * WG < p.vocab) {
      let d = z[k] - m;
      let e = exp(d);
      mass += e;
      zexp += e * d;
    }
  }
  let total = reduce_sum(lid, mass);
  let ze = reduce_sum(lid, zexp);
  let first = reduce_u(lid, select(NONE, best_i, best == m && best_i != NONE), OP_MIN);
  if (lid == 0u) { chunkStats[row * chunkCount() + wid.x] = vec4f(m, total, ze, bitcast<f32>(first)); }
}

@compute @workgroup_size(WG)
fn finish(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_id) lidv: vec3u) {
  let row = wid.x + wid.y * 65535u;
  if (row >= p.rows) { return; }
  let rp = row_params[row];
  if (rp.top_p < 1.0) { return; }
  let lid = lidv.x;
  let greedy = rp.temperature <= 0.0;
  let inv_t = select(1.0 / rp.temperature, 1.0, greedy);
  let base = row * p.vocab;
  let C = chunkCount();
  let stats0 = row * C;
  // Thread lid takes the contiguous chunks [c0, c1): the scan below needs them in index order.
  let per = (C + WG - 1u) / WG;
  let c0 = min(lid * per, C);
  let c1 = min(c0 + per, C);
  var mc = LOWEST;
  for (var c = c0; c < c1; c++) { mc = max(mc, chunkStats[stats0 + c].x); }
  let m = reduce_max(lid, mc);
  // Σ exp(z − m) = Σ_c exp(m_c − m)·Z_c; Σ exp(z − m)(z − m) = Σ_c exp(m_c − m)·(E_c + Z_c·(m_c − m)).
  var own = 0.0;
  var zexp = 0.0;
  var first = NONE;
  for (var c = c0; c < c1; c++) {
    let st = chunkStats[stats0 + c];
    let w = exp(st.x - m);
    own += w * st.y;
    zexp += w * (st.z + st.y * (st.x - m));
    if (st.x == m) { first = min(first, bitcast<u32>(st.w)); }
  }
  let total = reduce_sum(lid, own);
  let entropy = log(total) - reduce_sum(lid, zexp) / total;
  if (greedy) {
    let tok = reduce_u(lid, first, OP_MIN);
    if (lid == 0u) {
      tokens[row] = tok;
      logprobs[row] = logits[base + tok] - m - log(total);
      entropies[row] = entropy;
    }
    return;
  }
  let goal = uniform01(rp.seed, rp.stream, rp.step) * total;
  // The chunk the goal falls in: the thread whose run of chunks holds it walks them; rounding can leave the goal just
  // past the last chunk with mass, which then takes it.
  let incl = scan(lid, own);
  var pick = NONE;
  var last = NONE;
  var acc = incl - own;
  for (var c = c0; c < c1; c++) {
    let st = chunkStats[stats0 + c];
    let w = exp(st.x - m) * st.y;
    if (w > 0.0) {
      if (goal >= acc && goal < acc + w && pick == NONE) { pick = c; }
      last = c;
    }
    acc += w;
  }
  let pickMin = reduce_u(lid, pick, OP_MIN);
  let lastMax = reduce_u(lid, select(0u, last + 1u, last != NONE), OP_MAX);
  var chunk = pickMin;
  if (chunk == NONE) { chunk = lastMax - 1u; }
  // What of the goal is left past the chunks before the chosen one (each thread adds up its chunks before it).
  var before = 0.0;
  for (var c = c0; c < min(c1, chunk); c++) {
    let st = chunkStats[stats0 + c];
    before += exp(st.x - m) * st.y;
  }
  let rest = goal - reduce_sum(lid, before);
  // Inside the chunk: PER contiguous tokens a thread, their masses scanned in index order, then the thread whose
  // tokens hold the rest walks them.
  let t0 = min(chunk * CHUNK + lid * PER, p.vocab);
  let t1 = min(t0 + PER, p.vocab);
  var mass = 0.0;
  var lastKept = NONE;
  for (var i = t0; i < t1; i++) {
    let zi = logits[base + i] * inv_t;
    if (zi >= LOWEST) { mass += exp(zi - m); lastKept = i; }
  }
  let inclT = scan(lid, mass);
  var tok = NONE;
  if (rest >= inclT - mass && rest < inclT && mass > 0.0) {
    var a = inclT - mass;
    for (var i = t0; i < t1; i++) {
      let zi = logits[base + i] * inv_t;
      if (zi >= LOWEST) {
        a += exp(zi - m);
        if (a > rest && tok == NONE) { tok = i; }
      }
    }
    tok = select(tok, lastKept, tok == NONE);
  }
  tok = reduce_u(lid, tok, OP_MIN);
  // Rounding can leave the rest just past the chunk's last kept token.
  let lastInChunk = reduce_u(lid, select(0u, lastKept + 1u, lastKept != NONE), OP_MAX);
  if (tok == NONE) { tok = lastInChunk - 1u; }
  if (lid == 0u) {
    tokens[row] = tok;
    logprobs[row] = logits[base + tok] * inv_t - m - log(total);
    entropies[row] = entropy;
  }
}
