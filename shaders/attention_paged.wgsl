// Attention of new tokens' queries over the paged KV cache (inference: prefill chunks and decode).
// Query i of sequence s at position pos attends to cache positions 0..pos of s; position x lives in
// slot pageTable[s][x / pageSize]·pageSize + x % pageSize of the layer's K/V buffers
// [numPages·pageSize, nKv, HD] (CT: f32, or f16 storage). A workgroup takes BQ rows — (query, head of the
// GQA group) pairs of one sequence and kv head — and one split of the keys (flash-decoding): with
// splits > 1 it writes unnormalised partial outputs and their (max, sum), and `combine` merges them.
// Entry points: main (tiles of BQ rows; same tiling and vec4 "slot" layout as attention_prefill.wgsl),
// decode (at most 4 rows per workgroup: one query of a GQA group), combine. Variant consts: HD; alias CT.
struct Params {
  Tq: u32, nHeads: u32, nKv: u32, group: u32, pageSize: u32, maxPages: u32, splits: u32, chunk: u32,
  scale2: f32, _p0: u32, _p1: u32, _p2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> kc: array<CT>;
@group(0) @binding(3) var<storage, read> vc: array<CT>;
@group(0) @binding(4) var<storage, read> qStarts: array<u32>;
@group(0) @binding(5) var<storage, read> qPositions: array<u32>;
@group(0) @binding(6) var<storage, read> pageTable: array<u32>;
// splits == 1: o [Tq, nHeads, HD]; else partial o [splits, Tq, nHeads, HD] (unnormalised)
@group(0) @binding(7) var<storage, read_write> out: array<f32>;
@group(0) @binding(8) var<storage, read_write> partML: array<vec2f>;   // [splits, Tq·nHeads]: (max, sum), log2 domain

const NS = (u32(HD) + 3u) / 4u;
const KS = NS + 1u;
const BQ = 16u;
const BK = 32u;
const WG = 128u;
// The #unroll counts of `main`, in the preprocessor's terms (it knows only the variant's consts).
const_assert BK == 32u && WG == 128u && NS == (u32(HD) + 3u) / 4u;
const MASKED = -3.0e38;
const NO_ROW = 0xffffffffu;

var<workgroup> qs: array<vec4f, BQ * NS>;
var<workgroup> kv: array<vec4f, BK * KS>;
var<workgroup> scores: array<vec4f, 4u * BK>;
var<workgroup> probs: array<vec4f, 4u * BK>;
var<workgroup> rowPos: array<u32, BQ>;
var<workgroup> rowQ: array<u32, BQ>;
var<workgroup> keySlot: array<u32, BK>;
var<workgroup> keyRange: vec2u;

fn q_slot(base: u32, s: u32) -> vec4f {
  var r = vec4f(q[base + s], 0.0, 0.0, 0.0);
  if (s + NS < u32(HD)) { r.y = q[base + s + NS]; }
  if (s + 2u * NS < u32(HD)) { r.z = q[base + s + 2u * NS]; }
  if (s + 3u * NS < u32(HD)) { r.w = q[base + s + 3u * NS]; }
  return r;
}

fn k_slot(base: u32, s: u32) -> vec4f {
  var r = vec4f(f32(kc[base + s]), 0.0, 0.0, 0.0);
  if (s + NS < u32(HD)) { r.y = f32(kc[base + s + NS]); }
  if (s + 2u * NS < u32(HD)) { r.z = f32(kc[base + s + 2u * NS]); }
  if (s + 3u * NS < u32(HD)) { r.w = f32(kc[base + s + 3u * NS]); }
  return r;
}

fn v_slot(base: u32, s: u32) -> vec4f {
  var r = vec4f(f32(vc[base + s]), 0.0, 0.0, 0.0);
  if (s + NS < u32(HD)) { r.y = f32(vc[base + s + NS]); }
  if (s + 2u * NS < u32(HD)) { r.z = f32(vc[base + s + 2u * NS]); }
  if (s + 3u * NS < u32(HD)) { r.w = f32(vc[base + s + 3u * NS]); }
  return r;
}

fn store_row(r: u32, lane: u32, split: u32, acc: vec4f, m: f32, l: f32) {
  let row = rowQ[r];
  if (row == NO_ROW) { return; }
  // Normalise here when this workgroup saw all the keys; `combine` does it otherwise.
  var inv = 1.0;
  if (p.splits == 1u) { inv = 1.0 / l; }
  if (lane < NS) {
    let base = (split * p.Tq * p.nHeads + row) * u32(HD) + lane;
    out[base] = acc.x * inv;
    if (lane + NS < u32(HD)) { out[base + NS] = acc.y * inv; }
    if (lane + 2u * NS < u32(HD)) { out[base + 2u * NS] = acc.z * inv; }
    if (lane + 3u * NS < u32(HD)) { out[base + 3u * NS] = acc.w * inv; }
  }
  if (lane == 0u && p.splits > 1u) { partML[split * p.Tq * p.nHeads + row] = vec2f(m, l); }
}

@compute @workgroup_size(128)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) tid: u32) {
  let seq = wid.z;
  let kvh = wid.y;
  let split = wid.x % p.splits;
  let flat0 = (wid.x / p.splits) * BQ;
  let q0 = qStarts[seq];
  let nRows = (qStarts[seq + 1u] - q0) * p.group;
  let lane = tid % BK;
  let rg = tid / BK;
  if (tid < BQ) {
    let f = flat0 + tid;
    if (f < nRows) {
      let t = q0 + f / p.group;
      rowPos[tid] = qPositions[t];
      rowQ[tid] = t * p.nHeads + kvh * p.group + f % p.group;
    } else {
      rowPos[tid] = 0u;
      rowQ[tid] = NO_ROW;
    }
  }
  for (var i = tid; i < BQ * NS; i += WG) {
    let f = flat0 + i / NS;
    var val = vec4f(0.0);
    if (f < nRows) {
      let t = q0 + f / p.group;
      val = q_slot((t * p.nHeads + kvh * p.group + f % p.group) * u32(HD), i % NS);
    }
    qs[i] = val;
  }
  workgroupBarrier();
  if (tid == 0u) {
    var maxPos = 0u;
    var any = false;
    for (var r = 0u; r < BQ; r++) {
      if (rowQ[r] != NO_ROW) { maxPos = max(maxPos, rowPos[r]); any = true; }
    }
    let begin = split * p.chunk;
    var end = 0u;
    if (any) { end = min(maxPos + 1u, begin + p.chunk); }
    keyRange = vec2u(begin, max(begin, end));
  }
  let range = workgroupUniformLoad(&keyRange);
  if (flat0 >= nRows) { return; }

  let r0 = rg * 4u;
  let pos = vec4u(rowPos[r0], rowPos[r0 + 1u], rowPos[r0 + 2u], rowPos[r0 + 3u]);
  var m = vec4f(-1.0e30);
  var l = vec4f(0.0);
  var o0 = vec4f(0.0);
  var o1 = vec4f(0.0);
  var o2 = vec4f(0.0);
  var o3 = vec4f(0.0);
  let pages = seq * p.maxPages;
  for (var kb = range.x; kb < range.y; kb += BK) {
    if (tid < BK) {
      let key = kb + tid;
      var slot = 0u;
      if (key < range.y) { slot = pageTable[pages + key / p.pageSize] * p.pageSize + key % p.pageSize; }
      keySlot[tid] = slot;
    }
    workgroupBarrier();
#unroll u (32 * ((HD + 3) / 4) + 127) / 128
    { let i = tid + u * WG;
      if (i < BK * NS) {
        var val = vec4f(0.0);
        if (kb + i / NS < range.y) { val = k_slot((keySlot[i / NS] * p.nKv + kvh) * u32(HD), i % NS); }
        kv[(i / NS) * KS + i % NS] = val;
      }
    }
#endunroll
    workgroupBarrier();
    var s = vec4f(0.0);
#unroll j (HD + 3) / 4
    { let kk = kv[lane * KS + j];
      s += vec4f(dot(qs[r0 * NS + j], kk), dot(qs[(r0 + 1u) * NS + j], kk),
                 dot(qs[(r0 + 2u) * NS + j], kk), dot(qs[(r0 + 3u) * NS + j], kk));
    }
#endunroll
    let key = kb + lane;
    s = select(vec4f(MASKED), s * p.scale2, (vec4u(key) <= pos) & vec4(key < range.y));
    scores[rg * BK + lane] = s;
    workgroupBarrier();
    var mt = m;
#unroll j 32
    mt = max(mt, scores[rg * BK + j]);
#endunroll
    let alpha = exp2(m - mt);
    let pr = exp2(s - mt);
    m = mt;
    l = l * alpha + pr;
    probs[rg * BK + lane] = pr;
    o0 *= alpha.x;
    o1 *= alpha.y;
    o2 *= alpha.z;
    o3 *= alpha.w;
#unroll u (32 * ((HD + 3) / 4) + 127) / 128
    { let i = tid + u * WG;
      if (i < BK * NS) {
        var val = vec4f(0.0);
        if (kb + i / NS < range.y) { val = v_slot((keySlot[i / NS] * p.nKv + kvh) * u32(HD), i % NS); }
        kv[(i / NS) * KS + i % NS] = val;
      }
    }
#endunroll
    workgroupBarrier();
    if (lane < NS) {
#unroll j 32
      { let pj = probs[rg * BK + j]; let vj = kv[j * KS + lane];
        o0 += pj.x * vj; o1 += pj.y * vj; o2 += pj.z * vj; o3 += pj.w * vj; }
#endunroll
    }
    workgroupBarrier();
  }
  scores[rg * BK + lane] = l;
  workgroupBarrier();
  var lt = vec4f(0.0);
#unroll j 32
  lt += scores[rg * BK + j];
#endunroll
  store_row(r0, lane, split, o0, m.x, lt.x);
  store_row(r0 + 1u, lane, split, o1, m.y, lt.y);
  store_row(r0 + 2u, lane, split, o2, m.z, lt.z);
  store_row(r0 + 3u, lane, split, o3, m.w, lt.w);
}

// o[row, d] = Σ_split out[split, row, d]·2^(m_split − M) / Σ_split l_split·2^(m_split − M), M = max m_split.
@group(0) @binding(9) var<storage, read_write> o: array<f32>;

@compute @workgroup_size(256)
fn combine(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let rows = p.Tq * p.nHeads;
  let i = gid.x + gid.y * nwg.x * 256u;
  if (i >= rows * u32(HD)) { return; }
  let row = i / u32(HD);
  var mMax = -1.0e30;
  for (var s = 0u; s < p.splits; s++) { mMax = max(mMax, partML[s * rows + row].x); }
  var num = 0.0;
  var den = 0.0;
  for (var s = 0u; s < p.splits; s++) {
    let e = partML[s * rows + row];
    let w = exp2(e.x - mMax);
    num += out[s * rows * u32(HD) + i] * w;
    den += e.y * w;
  }
  o[i] = num / den;
}

// ---- decode: at most DR rows (e.g. one query × the GQA group) of a sequence and kv head ----
// The 4 groups of 32 lanes take 4 different 32-key tiles of each 128-key step (each lane one key; K rows
// read straight from the cache, 4 lanes per row), keep their own online softmax, and are merged at the end.
// Here a row's vec4 c holds the contiguous dims 4c..4c+3 (needs HD % 4 == 0), read from kc4/vc4: the
// same cache buffers as kc/vc, seen as vec4s.
@group(0) @binding(10) var<storage, read> kc4: array<vec4<CT>>;
@group(0) @binding(11) var<storage, read> vc4: array<vec4<CT>>;

const DR = 4u;
const NV = max(1u, u32(HD) / 4u);

var<workgroup> dQ: array<vec4f, DR * NV>;
// Scores at [0, WG) and probabilities at [WG, 2·WG), [group][lane] with the DR rows in a vec4; the final
// merge reuses it all as [group][row][lane] partial outputs (less workgroup memory leaves more L1 cache).
var<workgroup> dShared: array<vec4f, 4u * DR * 32u>;
var<workgroup> dSlot: array<u32, WG>;
var<workgroup> dRowPos: array<u32, DR>;
var<workgroup> dRowQ: array<u32, DR>;
var<workgroup> dGroupM: array<vec4f, 4u>;
var<workgroup> dGroupL: array<vec4f, 4u>;
var<workgroup> dRange: vec2u;

fn store_decode_row(r: u32, lane: u32, split: u32, acc: vec4f, m: f32, l: f32) {
  let row = dRowQ[r];
  if (row == NO_ROW || lane >= NV) { return; }
  let base = (split * p.Tq * p.nHeads + row) * u32(HD) + 4u * lane;
  var val = acc;
  if (p.splits == 1u) { val = acc / l; }
  out[base] = val.x;
  out[base + 1u] = val.y;
  out[base + 2u] = val.z;
  out[base + 3u] = val.w;
  if (lane == 0u && p.splits > 1u) { partML[split * p.Tq * p.nHeads + row] = vec2f(m, l); }
}

@compute @workgroup_size(128)
fn decode(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) tid: u32) {
  let seq = wid.z;
  let kvh = wid.y;
  let split = wid.x % p.splits;
  let flat0 = (wid.x / p.splits) * DR;
  let q0 = qStarts[seq];
  let nRows = (qStarts[seq + 1u] - q0) * p.group;
  let lane = tid % 32u;
  let g = tid / 32u;
  if (tid < DR) {
    let f = flat0 + tid;
    if (f < nRows) {
      let t = q0 + f / p.group;
      dRowPos[tid] = qPositions[t];
      dRowQ[tid] = t * p.nHeads + kvh * p.group + f % p.group;
    } else {
      dRowPos[tid] = 0u;
      dRowQ[tid] = NO_ROW;
    }
  }
  for (var i = tid; i < DR * NV; i += WG) {
    let f = flat0 + i / NV;
    var val = vec4f(0.0);
    if (f < nRows) {
      let base = ((q0 + f / p.group) * p.nHeads + kvh * p.group + f % p.group) * u32(HD) + 4u * (i % NV);
      val = vec4f(q[base], q[base + 1u], q[base + 2u], q[base + 3u]);
    }
    dQ[i] = val;
  }
  workgroupBarrier();
  if (tid == 0u) {
    var maxPos = 0u;
    var any = false;
    for (var r = 0u; r < DR; r++) {
      if (dRowQ[r] != NO_ROW) { maxPos = max(maxPos, dRowPos[r]); any = true; }
    }
    let begin = split * p.chunk;
    var end = 0u;
    if (any) { end = min(maxPos + 1u, begin + p.chunk); }
    dRange = vec2u(begin, max(begin, end));
  }
  let range = workgroupUniformLoad(&dRange);

  let pos = vec4u(dRowPos[0], dRowPos[1], dRowPos[2], dRowPos[3]);
  let pages = seq * p.maxPages;
  var m = vec4f(-1.0e30);
  var l = vec4f(0.0);
  var o0 = vec4f(0.0);
  var o1 = vec4f(0.0);
  var o2 = vec4f(0.0);
  var o3 = vec4f(0.0);
  let quarter = lane % 4u;
  let sub = lane / 4u;
  for (var kb = range.x; kb < range.y; kb += WG) {
    let key = kb + tid;
    var slot = 0u;
    if (key < range.y) { slot = pageTable[pages + key / p.pageSize] * p.pageSize + key % p.pageSize; }
    dSlot[tid] = slot;
    workgroupBarrier();
    // Partial scores: 4 lanes per key row (vec4s quarter, quarter+4, …: neighbouring lanes read neighbouring
    // bytes), 8 keys of the group per step; [group][step][lane] in dShared.
    for (var step = 0u; step < 4u; step++) {
      let j = g * 32u + step * 8u + sub;
      var part = vec4f(0.0);
      if (kb + j < range.y) {
        let base = (dSlot[j] * p.nKv + kvh) * NV;
        for (var c = quarter; c < NV; c += 4u) {
          let kk = vec4f(kc4[base + c]);
          part += vec4f(dot(dQ[c], kk), dot(dQ[NV + c], kk), dot(dQ[2u * NV + c], kk), dot(dQ[3u * NV + c], kk));
        }
      }
      dShared[(g * 4u + step) * 32u + lane] = part;
    }
    workgroupBarrier();
    let pp = (g * 4u + lane / 8u) * 32u + (lane % 8u) * 4u;   // the 4 partials of this lane's own key
    var s = dShared[pp] + dShared[pp + 1u] + dShared[pp + 2u] + dShared[pp + 3u];
    workgroupBarrier();
    s = select(vec4f(MASKED), s * p.scale2, (vec4u(key) <= pos) & vec4(key < range.y));
    dShared[tid] = s;
    workgroupBarrier();
    var mt = m;
    for (var j = 0u; j < 32u; j++) { mt = max(mt, dShared[g * 32u + j]); }
    let alpha = exp2(m - mt);
    let pr = exp2(s - mt);
    m = mt;
    l = l * alpha + pr;
    dShared[WG + tid] = pr;
    o0 *= alpha.x;
    o1 *= alpha.y;
    o2 *= alpha.z;
    o3 *= alpha.w;
    workgroupBarrier();
    if (lane < NV) {
      let n = min(32u, range.y - min(range.y, kb + g * 32u));
      for (var j = 0u; j < n; j++) {
        let pj = dShared[WG + g * 32u + j];
        let vv = vec4f(vc4[(dSlot[g * 32u + j] * p.nKv + kvh) * NV + lane]);
        o0 += pj.x * vv;
        o1 += pj.y * vv;
        o2 += pj.z * vv;
        o3 += pj.w * vv;
      }
    }
    workgroupBarrier();
  }
  // Merge the 4 groups: M = max m_g, weights 2^(m_g − M).
  dShared[tid] = l;
  workgroupBarrier();
  if (lane == 0u) {
    var lt = vec4f(0.0);
    for (var j = 0u; j < 32u; j++) { lt += dShared[g * 32u + j]; }
    dGroupM[g] = m;
    dGroupL[g] = lt;
  }
  workgroupBarrier();
  dShared[(g * DR) * 32u + lane] = o0;
  dShared[(g * DR + 1u) * 32u + lane] = o1;
  dShared[(g * DR + 2u) * 32u + lane] = o2;
  dShared[(g * DR + 3u) * 32u + lane] = o3;
  workgroupBarrier();
  if (g == 0u) {
    let mAll = max(max(dGroupM[0], dGroupM[1]), max(dGroupM[2], dGroupM[3]));
    let w0 = exp2(dGroupM[0] - mAll);
    let w1 = exp2(dGroupM[1] - mAll);
    let w2 = exp2(dGroupM[2] - mAll);
    let w3 = exp2(dGroupM[3] - mAll);
    let lAll = w0 * dGroupL[0] + w1 * dGroupL[1] + w2 * dGroupL[2] + w3 * dGroupL[3];
    for (var r = 0u; r < DR; r++) {
      let acc = w0[r] * dShared[r * 32u + lane] + w1[r] * dShared[(DR + r) * 32u + lane]
              + w2[r] * dShared[(2u * DR + r) * 32u + lane] + w3[r] * dShared[(3u * DR + r) * 32u + lane];
      store_decode_row(r, lane, split, acc, mAll[r], lAll[r]);
    }
  }
}
