// Causal attention over packed sequences (FlashAttention-2 forward): o = softmax(q·kᵀ·scale) v and the
// row log-sum-exp, without a T×T matrix. A workgroup takes BQ query rows of one kv head; a row is a
// (token, head of the GQA group) pair, so the heads sharing a kv head share every K/V tile loaded.
// Head dims are stored as NS = ceil(HD/4) vec4 "slots"; slot s holds dims s, s+NS, s+2NS, s+3NS, so a
// dot product over slots is the full dot product and each lane owns whole slots of the output.
// Scores live in the log2 domain (scale2 = scale·log2 e) for exp2. Variant consts: HD (head dim) and
// ROWS (4 or 8 query rows per thread: 8 halves the workgroup-memory reads per FMA where memory allows).
struct Params { T: u32, nHeads: u32, nKv: u32, group: u32, numSeqs: u32, scale2: f32, _p0: u32, _p1: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read> seqStarts: array<u32>;
@group(0) @binding(5) var<storage, read_write> o: array<f32>;
@group(0) @binding(6) var<storage, read_write> lse: array<f32>;

const NS = (u32(HD) + 3u) / 4u;
const KS = NS + 1u;          // padded stride of a key row in workgroup memory: lanes read distinct banks
const BQ = 4u * u32(ROWS);   // query rows per workgroup: 4 row groups × ROWS rows
const HALVES = u32(ROWS) / 4u;
const BK = 32u;              // keys per tile = lanes per row group
const WG = 128u;
// The #unroll counts of `main`, in the preprocessor's terms (it knows only the variant's consts): written out
// because wgpu bounds every loop, and the driver then kept such loops rolled (bench/RESULTS.md, 2026-12-07 22:58).
const_assert BK == 32u && WG == 128u && NS == (u32(HD) + 3u) / 4u;
const MASKED = -3.0e38;      // score of a masked key (exp2 of it minus any max is 0)
const NO_ROW = 0xffffffffu;

var<workgroup> qs: array<vec4f, BQ * NS>;
var<workgroup> kv: array<vec4f, BK * KS>;       // the K tile, then the V tile
var<workgroup> scores: array<vec4f, HALVES * 4u * BK>;   // [half][row group][key], 4 rows in a vec4
var<workgroup> probs: array<vec4f, HALVES * 4u * BK>;
var<workgroup> rowTok: array<u32, BQ>;
var<workgroup> rowStart: array<u32, BQ>;
var<workgroup> rowQ: array<u32, BQ>;            // token·nHeads + head, or NO_ROW past the end
var<workgroup> keyRange: vec2u;

fn seq_start(t: u32) -> u32 {
  var lo = 0u;
  var hi = p.numSeqs;
  while (hi - lo > 1u) {
    let mid = (lo + hi) / 2u;
    if (seqStarts[mid] <= t) { lo = mid; } else { hi = mid; }
  }
  return seqStarts[lo];
}

fn q_slot(base: u32, s: u32) -> vec4f {
  var r = vec4f(q[base + s], 0.0, 0.0, 0.0);
  if (s + NS < u32(HD)) { r.y = q[base + s + NS]; }
  if (s + 2u * NS < u32(HD)) { r.z = q[base + s + 2u * NS]; }
  if (s + 3u * NS < u32(HD)) { r.w = q[base + s + 3u * NS]; }
  return r;
}

fn k_slot(base: u32, s: u32) -> vec4f {
  var r = vec4f(k[base + s], 0.0, 0.0, 0.0);
  if (s + NS < u32(HD)) { r.y = k[base + s + NS]; }
  if (s + 2u * NS < u32(HD)) { r.z = k[base + s + 2u * NS]; }
  if (s + 3u * NS < u32(HD)) { r.w = k[base + s + 3u * NS]; }
  return r;
}

fn v_slot(base: u32, s: u32) -> vec4f {
  var r = vec4f(v[base + s], 0.0, 0.0, 0.0);
  if (s + NS < u32(HD)) { r.y = v[base + s + NS]; }
  if (s + 2u * NS < u32(HD)) { r.z = v[base + s + 2u * NS]; }
  if (s + 3u * NS < u32(HD)) { r.w = v[base + s + 3u * NS]; }
  return r;
}

fn store_row(r: u32, lane: u32, acc: vec4f, m: f32, l: f32) {
  let row = rowQ[r];
  if (row == NO_ROW) { return; }
  if (lane < NS) {
    let inv = 1.0 / l;
    let base = row * u32(HD) + lane;
    o[base] = acc.x * inv;
    if (lane + NS < u32(HD)) { o[base + NS] = acc.y * inv; }
    if (lane + 2u * NS < u32(HD)) { o[base + 2u * NS] = acc.z * inv; }
    if (lane + 3u * NS < u32(HD)) { o[base + 3u * NS] = acc.w * inv; }
  }
  if (lane == 0u) { lse[row] = (m + log2(l)) * 0.6931471805599453; }
}

@compute @workgroup_size(128)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let kvh = wid.y;
  let flat0 = (nwg.x - 1u - wid.x) * BQ;   // last tiles (most keys under the causal mask) start first
  let nRows = p.T * p.group;
  let lane = tid % BK;
  let rg = tid / BK;
  if (tid < BQ) {
    let f = flat0 + tid;
    if (f < nRows) {
      let t = f / p.group;
      rowTok[tid] = t;
      rowStart[tid] = seq_start(t);
      rowQ[tid] = t * p.nHeads + kvh * p.group + f % p.group;
    } else {
      rowTok[tid] = 0u;
      rowStart[tid] = 1u;
      rowQ[tid] = NO_ROW;
    }
  }
  for (var i = tid; i < BQ * NS; i += WG) {
    let f = flat0 + i / NS;
    var val = vec4f(0.0);
    if (f < nRows) {
      let t = f / p.group;
      val = q_slot((t * p.nHeads + kvh * p.group + f % p.group) * u32(HD), i % NS);
    }
    qs[i] = val;
  }
  workgroupBarrier();
  if (tid == 0u) {
    // Keys from the start of the first row's sequence to the last row's token (rows are in token order).
    let last = min(BQ, nRows - flat0) - 1u;
    keyRange = vec2u(rowStart[0], rowTok[last] + 1u);
  }
  let range = workgroupUniformLoad(&keyRange);

  let r0 = rg * u32(ROWS);
  let r1 = r0 + 4u;   // second half of the thread's rows (ROWS == 8)
  let tokA = vec4u(rowTok[r0], rowTok[r0 + 1u], rowTok[r0 + 2u], rowTok[r0 + 3u]);
  let startA = vec4u(rowStart[r0], rowStart[r0 + 1u], rowStart[r0 + 2u], rowStart[r0 + 3u]);
  var tokB = vec4u(0u);
  var startB = vec4u(1u);
  if (ROWS == 8) {
    tokB = vec4u(rowTok[r1], rowTok[r1 + 1u], rowTok[r1 + 2u], rowTok[r1 + 3u]);
    startB = vec4u(rowStart[r1], rowStart[r1 + 1u], rowStart[r1 + 2u], rowStart[r1 + 3u]);
  }
  let sa = rg * BK;              // this row group's scores/probs, first half
  let sb = (4u + rg) * BK;       // second half
  var mA = vec4f(-1.0e30);
  var mB = vec4f(-1.0e30);
  var lA = vec4f(0.0);   // this lane's share of the row sums
  var lB = vec4f(0.0);
  var o0 = vec4f(0.0);
  var o1 = vec4f(0.0);
  var o2 = vec4f(0.0);
  var o3 = vec4f(0.0);
  var o4 = vec4f(0.0);
  var o5 = vec4f(0.0);
  var o6 = vec4f(0.0);
  var o7 = vec4f(0.0);
  for (var kb = range.x; kb < range.y; kb += BK) {
#unroll u (32 * ((HD + 3) / 4) + 127) / 128
    { let i = tid + u * WG;
      if (i < BK * NS) {
        let key = kb + i / NS;
        var val = vec4f(0.0);
        if (key < range.y) { val = k_slot((key * p.nKv + kvh) * u32(HD), i % NS); }
        kv[(i / NS) * KS + i % NS] = val;
      }
    }
#endunroll
    workgroupBarrier();
    var s0 = vec4f(0.0);
    var s1 = vec4f(0.0);
#unroll j (HD + 3) / 4
    { let kk = kv[lane * KS + j];
      s0 += vec4f(dot(qs[r0 * NS + j], kk), dot(qs[(r0 + 1u) * NS + j], kk),
                  dot(qs[(r0 + 2u) * NS + j], kk), dot(qs[(r0 + 3u) * NS + j], kk));
      if (ROWS == 8) {
        s1 += vec4f(dot(qs[r1 * NS + j], kk), dot(qs[(r1 + 1u) * NS + j], kk),
                    dot(qs[(r1 + 2u) * NS + j], kk), dot(qs[(r1 + 3u) * NS + j], kk));
      }
    }
#endunroll
    let key = vec4u(kb + lane);
    s0 = select(vec4f(MASKED), s0 * p.scale2, (key >= startA) & (key <= tokA));
    s1 = select(vec4f(MASKED), s1 * p.scale2, (key >= startB) & (key <= tokB));
    scores[sa + lane] = s0;
    if (ROWS == 8) { scores[sb + lane] = s1; }
    workgroupBarrier();
    var mtA = mA;
    var mtB = mB;
#unroll j 32
    mtA = max(mtA, scores[sa + j]); if (ROWS == 8) { mtB = max(mtB, scores[sb + j]); }
#endunroll
    let alphaA = exp2(mA - mtA);
    let alphaB = exp2(mB - mtB);
    let pA = exp2(s0 - mtA);
    let pB = exp2(s1 - mtB);
    mA = mtA;
    mB = mtB;
    lA = lA * alphaA + pA;
    lB = lB * alphaB + pB;
    probs[sa + lane] = pA;
    if (ROWS == 8) { probs[sb + lane] = pB; }
    o0 *= alphaA.x;
    o1 *= alphaA.y;
    o2 *= alphaA.z;
    o3 *= alphaA.w;
    o4 *= alphaB.x;
    o5 *= alphaB.y;
    o6 *= alphaB.z;
    o7 *= alphaB.w;
#unroll u (32 * ((HD + 3) / 4) + 127) / 128
    { let i = tid + u * WG;
      if (i < BK * NS) {
        let key = kb + i / NS;
        var val = vec4f(0.0);
        if (key < range.y) { val = v_slot((key * p.nKv + kvh) * u32(HD), i % NS); }
        kv[(i / NS) * KS + i % NS] = val;
      }
    }
#endunroll
    workgroupBarrier();
    if (lane < NS) {
#unroll j 32
      { let vj = kv[j * KS + lane]; let pa = probs[sa + j];
        o0 += pa.x * vj; o1 += pa.y * vj; o2 += pa.z * vj; o3 += pa.w * vj;
        if (ROWS == 8) { let pb = probs[sb + j]; o4 += pb.x * vj; o5 += pb.y * vj; o6 += pb.z * vj; o7 += pb.w * vj; }
      }
#endunroll
    }
    workgroupBarrier();
  }
  scores[sa + lane] = lA;
  if (ROWS == 8) { scores[sb + lane] = lB; }
  workgroupBarrier();
  var ltA = vec4f(0.0);
  var ltB = vec4f(0.0);
#unroll j 32
  ltA += scores[sa + j]; if (ROWS == 8) { ltB += scores[sb + j]; }
#endunroll
  store_row(r0, lane, o0, mA.x, ltA.x);
  store_row(r0 + 1u, lane, o1, mA.y, ltA.y);
  store_row(r0 + 2u, lane, o2, mA.z, ltA.z);
  store_row(r0 + 3u, lane, o3, mA.w, ltA.w);
  if (ROWS == 8) {
    store_row(r1, lane, o4, mB.x, ltB.x);
    store_row(r1 + 1u, lane, o5, mB.y, ltB.y);
    store_row(r1 + 2u, lane, o6, mB.z, ltB.z);
    store_row(r1 + 3u, lane, o7, mB.w, ltB.w);
  }
}
