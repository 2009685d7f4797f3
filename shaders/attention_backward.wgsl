// Backward of attention_prefill.wgsl (FlashAttention-2): P is recomputed from q, k and the saved
// log-sum-exp, so no T×T matrix is stored, and no float atomics are used (results are deterministic):
//   delta: stats[row] = (lse·log2 e, D = Σ_d dO·o, start of the row's sequence) per (token, head) row
//   dkdv:  a workgroup per KB keys of one kv head loops over the query rows that can see them
//          (every head of the GQA group, so dk/dv sum over the group): dv += Pᵀ dO, dk += dSᵀ q·scale
//   dq:    a workgroup per BQ query rows loops over their keys: dq += dS k·scale
// with dS = P ⊙ (dO·vᵀ − D). Same vec4 "slot" layout of head dims as the forward. Variant const: HD.
struct Params { T: u32, nHeads: u32, nKv: u32, group: u32, numSeqs: u32, scale2: f32, scale: f32, _p0: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read> dO: array<f32>;
@group(0) @binding(5) var<storage, read_write> stats: array<vec4f>;   // (lse2, D, bitcast seq start, 0)
@group(0) @binding(6) var<storage, read> seqStarts: array<u32>;
@group(0) @binding(7) var<storage, read_write> dk: array<f32>;
@group(0) @binding(8) var<storage, read_write> dv: array<f32>;
@group(0) @binding(9) var<storage, read_write> dq: array<f32>;
@group(0) @binding(10) var<storage, read> o: array<f32>;
@group(0) @binding(11) var<storage, read> lse: array<f32>;

const NS = (u32(HD) + 3u) / 4u;
const KS = NS + 1u;
// Loops over a few constant steps are written out (#unroll; its counts use the variant's consts only, so they are
// restated: see the const_asserts): wgpu bounds every loop, and the driver then kept such loops rolled
// (bench/RESULTS.md, 2026-12-07 22:58).

fn seq_index(t: u32) -> u32 {
  var lo = 0u;
  var hi = p.numSeqs;
  while (hi - lo > 1u) {
    let mid = (lo + hi) / 2u;
    if (seqStarts[mid] <= t) { lo = mid; } else { hi = mid; }
  }
  return lo;
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

fn do_slot(base: u32, s: u32) -> vec4f {
  var r = vec4f(dO[base + s], 0.0, 0.0, 0.0);
  if (s + NS < u32(HD)) { r.y = dO[base + s + NS]; }
  if (s + 2u * NS < u32(HD)) { r.z = dO[base + s + 2u * NS]; }
  if (s + 3u * NS < u32(HD)) { r.w = dO[base + s + 3u * NS]; }
  return r;
}

// ---- delta: one thread per (token, head) row ----

@compute @workgroup_size(64)
fn delta(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let row = gid.x + gid.y * nwg.x * 64u;
  if (row >= p.T * p.nHeads) { return; }
  var acc = 0.0;
  for (var d = 0u; d < u32(HD); d++) { acc += dO[row * u32(HD) + d] * o[row * u32(HD) + d]; }
  let start = seqStarts[seq_index(row / p.nHeads)];
  stats[row] = vec4f(lse[row] * 1.4426950408889634, acc, bitcast<f32>(start), 0.0);
}

// ---- dkdv: 64 threads = 2 key groups (4 keys each) × 32 lanes; query tiles of QB rows ----

const KB = 8u;
const QB = 16u;
const_assert QB == 16u;  // the #unroll counts of dkdv

var<workgroup> kvTile: array<vec4f, 2u * KB * KS>;    // [K | V][key][slot]
var<workgroup> qdoTile: array<vec4f, 2u * QB * KS>;   // [q | dO][row][slot]
var<workgroup> pdp: array<vec4f, 2u * 2u * QB>;       // [P | dP][key group][row], the group's 4 keys in a vec4
var<workgroup> kRowTok: array<u32, QB>;
var<workgroup> kRowStart: array<u32, QB>;
var<workgroup> kRowStat: array<vec2f, QB>;       // (lse2, D)
var<workgroup> rowRange: vec2u;

fn store_dkdv(key: u32, kvh: u32, lane: u32, gk: vec4f, gv: vec4f) {
  if (key >= p.T || lane >= NS) { return; }
  let base = (key * p.nKv + kvh) * u32(HD) + lane;
  dk[base] = gk.x * p.scale;
  dv[base] = gv.x;
  if (lane + NS < u32(HD)) { dk[base + NS] = gk.y * p.scale; dv[base + NS] = gv.y; }
  if (lane + 2u * NS < u32(HD)) { dk[base + 2u * NS] = gk.z * p.scale; dv[base + 2u * NS] = gv.z; }
  if (lane + 3u * NS < u32(HD)) { dk[base + 3u * NS] = gk.w * p.scale; dv[base + 3u * NS] = gv.w; }
}

@compute @workgroup_size(64)
fn dkdv(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) tid: u32) {
  let kvh = wid.y;
  let key0 = wid.x * KB;
  let lane = tid % 32u;
  let kg = tid / 32u;
  for (var i = tid; i < KB * NS; i += 64u) {
    let key = key0 + i / NS;
    var kk = vec4f(0.0);
    var vv = vec4f(0.0);
    if (key < p.T) {
      kk = k_slot((key * p.nKv + kvh) * u32(HD), i % NS);
      vv = v_slot((key * p.nKv + kvh) * u32(HD), i % NS);
    }
    kvTile[(i / NS) * KS + i % NS] = kk;
    kvTile[(KB + i / NS) * KS + i % NS] = vv;
  }
  if (tid == 0u) {
    // Query rows from the first key's token to the end of the last key's sequence, all heads of the group.
    let last = min(key0 + KB, p.T) - 1u;
    rowRange = vec2u(key0 * p.group, seqStarts[seq_index(last) + 1u] * p.group);
  }
  let range = workgroupUniformLoad(&rowRange);

  let keys = vec4u(key0 + kg * 4u) + vec4u(0u, 1u, 2u, 3u);
  // Phase 1 roles: lanes 0..15 compute P for row `lane`, lanes 16..31 dP for row `lane − 16`.
  let which = lane / QB;
  let pr = lane % QB;
  var gk0 = vec4f(0.0);
  var gk1 = vec4f(0.0);
  var gk2 = vec4f(0.0);
  var gk3 = vec4f(0.0);
  var gv0 = vec4f(0.0);
  var gv1 = vec4f(0.0);
  var gv2 = vec4f(0.0);
  var gv3 = vec4f(0.0);
  for (var fb = range.x; fb < range.y; fb += QB) {
    if (tid < QB) {
      let f = fb + tid;
      if (f < range.y) {
        let t = f / p.group;
        let st = stats[t * p.nHeads + kvh * p.group + f % p.group];
        kRowTok[tid] = t;
        kRowStart[tid] = bitcast<u32>(st.z);
        kRowStat[tid] = st.xy;
      } else {
        kRowTok[tid] = 0u;
        kRowStart[tid] = 1u;
        kRowStat[tid] = vec2f(0.0);
      }
    }
#unroll u (16 * ((HD + 3) / 4) + 63) / 64
    { let i = tid + u * 64u;
      if (i < QB * NS) {
        let f = fb + i / NS;
        var qq = vec4f(0.0);
        var gg = vec4f(0.0);
        if (f < range.y) {
          let base = ((f / p.group) * p.nHeads + kvh * p.group + f % p.group) * u32(HD);
          qq = q_slot(base, i % NS);
          gg = do_slot(base, i % NS);
        }
        qdoTile[(i / NS) * KS + i % NS] = qq;
        qdoTile[(QB + i / NS) * KS + i % NS] = gg;
      }
    }
#endunroll
    workgroupBarrier();
    {
      let a = (which * QB + pr) * KS;
      let b = (which * KB + kg * 4u) * KS;
      var acc = vec4f(0.0);
#unroll s (HD + 3) / 4
      { let x = qdoTile[a + s];
        acc += vec4f(dot(x, kvTile[b + s]), dot(x, kvTile[b + KS + s]), dot(x, kvTile[b + 2u * KS + s]), dot(x, kvTile[b + 3u * KS + s])); }
#endunroll
      if (which == 0u) {
        let valid = (keys >= vec4u(kRowStart[pr])) & (keys <= vec4u(kRowTok[pr]));
        acc = select(vec4f(0.0), exp2(acc * p.scale2 - kRowStat[pr].x), valid);
      }
      pdp[(which * 2u + kg) * QB + pr] = acc;
    }
    workgroupBarrier();
    if (lane < NS) {
#unroll r 16
      { let pp = pdp[kg * QB + r]; let ds = pp * (pdp[(2u + kg) * QB + r] - kRowStat[r].y);
        let qq = qdoTile[r * KS + lane]; let gg = qdoTile[(QB + r) * KS + lane];
        gv0 += pp.x * gg; gv1 += pp.y * gg; gv2 += pp.z * gg; gv3 += pp.w * gg;
        gk0 += ds.x * qq; gk1 += ds.y * qq; gk2 += ds.z * qq; gk3 += ds.w * qq; }
#endunroll
    }
    workgroupBarrier();
  }
  store_dkdv(keys.x, kvh, lane, gk0, gv0);
  store_dkdv(keys.y, kvh, lane, gk1, gv1);
  store_dkdv(keys.z, kvh, lane, gk2, gv2);
  store_dkdv(keys.w, kvh, lane, gk3, gv3);
}

// ---- dq: 64 threads = 4 row groups (4 rows each) × 16 lanes; key tiles of DK keys ----

const DQ_ROWS = 16u;
const DK = 16u;
const_assert DK == 16u;  // the #unroll counts of dq_rows

var<workgroup> dqQ: array<vec4f, DQ_ROWS * NS>;
var<workgroup> dqDo: array<vec4f, DQ_ROWS * NS>;
var<workgroup> dqKv: array<vec4f, DK * KS>;          // the V tile, then the K tile
var<workgroup> dqDs: array<vec4f, 4u * DK>;          // [row group][key], 4 rows in a vec4
var<workgroup> qRowTok: array<u32, DQ_ROWS>;
var<workgroup> qRowStart: array<u32, DQ_ROWS>;
var<workgroup> qRowStat: array<vec2f, DQ_ROWS>;
var<workgroup> qRowIdx: array<u32, DQ_ROWS>;
var<workgroup> keyRange: vec2u;

fn store_dq(r: u32, s: u32, g: vec4f) {
  let row = qRowIdx[r];
  if (row == 0xffffffffu || s >= NS) { return; }
  let base = row * u32(HD) + s;
  dq[base] = g.x * p.scale;
  if (s + NS < u32(HD)) { dq[base + NS] = g.y * p.scale; }
  if (s + 2u * NS < u32(HD)) { dq[base + 2u * NS] = g.z * p.scale; }
  if (s + 3u * NS < u32(HD)) { dq[base + 3u * NS] = g.w * p.scale; }
}

@compute @workgroup_size(64)
fn dq_rows(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let kvh = wid.y;
  let flat0 = (nwg.x - 1u - wid.x) * DQ_ROWS;   // last rows (most keys) start first
  let nRows = p.T * p.group;
  let lane = tid % DK;
  let rg = tid / DK;
  if (tid < DQ_ROWS) {
    let f = flat0 + tid;
    if (f < nRows) {
      let t = f / p.group;
      let row = t * p.nHeads + kvh * p.group + f % p.group;
      let st = stats[row];
      qRowTok[tid] = t;
      qRowStart[tid] = bitcast<u32>(st.z);
      qRowStat[tid] = st.xy;
      qRowIdx[tid] = row;
    } else {
      qRowTok[tid] = 0u;
      qRowStart[tid] = 1u;
      qRowStat[tid] = vec2f(0.0);
      qRowIdx[tid] = 0xffffffffu;
    }
  }
  for (var i = tid; i < DQ_ROWS * NS; i += 64u) {
    let f = flat0 + i / NS;
    var qq = vec4f(0.0);
    var gg = vec4f(0.0);
    if (f < nRows) {
      let base = ((f / p.group) * p.nHeads + kvh * p.group + f % p.group) * u32(HD);
      qq = q_slot(base, i % NS);
      gg = do_slot(base, i % NS);
    }
    dqQ[i] = qq;
    dqDo[i] = gg;
  }
  workgroupBarrier();
  if (tid == 0u) {
    let last = min(DQ_ROWS, nRows - flat0) - 1u;
    keyRange = vec2u(qRowStart[0], qRowTok[last] + 1u);
  }
  let range = workgroupUniformLoad(&keyRange);

  let r0 = rg * 4u;
  let tok = vec4u(qRowTok[r0], qRowTok[r0 + 1u], qRowTok[r0 + 2u], qRowTok[r0 + 3u]);
  let start = vec4u(qRowStart[r0], qRowStart[r0 + 1u], qRowStart[r0 + 2u], qRowStart[r0 + 3u]);
  let lse2 = vec4f(qRowStat[r0].x, qRowStat[r0 + 1u].x, qRowStat[r0 + 2u].x, qRowStat[r0 + 3u].x);
  let dsum = vec4f(qRowStat[r0].y, qRowStat[r0 + 1u].y, qRowStat[r0 + 2u].y, qRowStat[r0 + 3u].y);
  let sb = lane + DK;   // this lane's second slot (head dims over 64)
  var ga0 = vec4f(0.0);
  var ga1 = vec4f(0.0);
  var ga2 = vec4f(0.0);
  var ga3 = vec4f(0.0);
  var gb0 = vec4f(0.0);
  var gb1 = vec4f(0.0);
  var gb2 = vec4f(0.0);
  var gb3 = vec4f(0.0);
  for (var kb = range.x; kb < range.y; kb += DK) {
#unroll u (16 * ((HD + 3) / 4) + 63) / 64
    { let i = tid + u * 64u;
      if (i < DK * NS) {
        let key = kb + i / NS;
        var vv = vec4f(0.0);
        if (key < range.y) { vv = v_slot((key * p.nKv + kvh) * u32(HD), i % NS); }
        dqKv[(i / NS) * KS + i % NS] = vv;
      }
    }
#endunroll
    workgroupBarrier();
    var dp = vec4f(0.0);
#unroll s (HD + 3) / 4
    { let x = dqKv[lane * KS + s];
      dp += vec4f(dot(dqDo[r0 * NS + s], x), dot(dqDo[(r0 + 1u) * NS + s], x),
                  dot(dqDo[(r0 + 2u) * NS + s], x), dot(dqDo[(r0 + 3u) * NS + s], x)); }
#endunroll
    workgroupBarrier();
#unroll u (16 * ((HD + 3) / 4) + 63) / 64
    { let i = tid + u * 64u;
      if (i < DK * NS) {
        let key = kb + i / NS;
        var kk = vec4f(0.0);
        if (key < range.y) { kk = k_slot((key * p.nKv + kvh) * u32(HD), i % NS); }
        dqKv[(i / NS) * KS + i % NS] = kk;
      }
    }
#endunroll
    workgroupBarrier();
    var sc = vec4f(0.0);
#unroll s (HD + 3) / 4
    { let x = dqKv[lane * KS + s];
      sc += vec4f(dot(dqQ[r0 * NS + s], x), dot(dqQ[(r0 + 1u) * NS + s], x),
                  dot(dqQ[(r0 + 2u) * NS + s], x), dot(dqQ[(r0 + 3u) * NS + s], x)); }
#endunroll
    let key = vec4u(kb + lane);
    let pr = select(vec4f(0.0), exp2(sc * p.scale2 - lse2), (key >= start) & (key <= tok));
    dqDs[rg * DK + lane] = pr * (dp - dsum);
    workgroupBarrier();
    if (lane < NS) {
#unroll j 16
      { let ds = dqDs[rg * DK + j]; let ka = dqKv[j * KS + lane];
        ga0 += ds.x * ka; ga1 += ds.y * ka; ga2 += ds.z * ka; ga3 += ds.w * ka;
        if (sb < NS) { let kb2 = dqKv[j * KS + sb]; gb0 += ds.x * kb2; gb1 += ds.y * kb2; gb2 += ds.z * kb2; gb3 += ds.w * kb2; } }
#endunroll
    }
    workgroupBarrier();
  }
  store_dq(r0, lane, ga0);
  store_dq(r0 + 1u, lane, ga1);
  store_dq(r0 + 2u, lane, ga2);
  store_dq(r0 + 3u, lane, ga3);
  store_dq(r0, sb, gb0);
  store_dq(r0 + 1u, sb, gb1);
  store_dq(r0 + 2u, sb, gb2);
  store_dq(r0 + 3u, sb, gb3);
}
