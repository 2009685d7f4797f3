// Backward of attention_prefill.wgsl, version 2 (needs `subgroups`): the same FlashAttention-2 scheme as
// attention_backward.wgsl (whose `delta` entry fills `stats` first), with each thread's operands in registers.
// A quad of four threads shares one key (dkdv) or one query row (dq), each thread holding a quarter of the head
// dims (vec4 slots slice, slice + 4, …): a score is four partial dots summed over the quad (quadSwapX/Y), so
// a thread does 4-8 FMAs per workgroup-memory load where version 1 does one, and needs one barrier pair per tile
// instead of three. Query rows (dkdv) and keys (dq) stream through workgroup memory in tiles.
// Threads fill subgroups in invocation order (local index 4i..4i+3 is one quad), as on every Vulkan driver.
// Variant const: HD (a multiple of 16).
struct Params { T: u32, nHeads: u32, nKv: u32, group: u32, numSeqs: u32, scale2: f32, scale: f32, _p0: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<vec4f>;
@group(0) @binding(2) var<storage, read> k: array<vec4f>;
@group(0) @binding(3) var<storage, read> v: array<vec4f>;
@group(0) @binding(4) var<storage, read> dO: array<vec4f>;
@group(0) @binding(5) var<storage, read> stats: array<vec4f>;   // (lse2, D, bitcast seq start, 0) per (token, head)
@group(0) @binding(6) var<storage, read> seqStarts: array<u32>;
@group(0) @binding(7) var<storage, read_write> dk: array<vec4f>;
@group(0) @binding(8) var<storage, read_write> dv: array<vec4f>;
@group(0) @binding(9) var<storage, read_write> dq: array<vec4f>;

const NS = u32(HD) / 4u;    // vec4 slots of a head
const J = u32(HD) / 16u;    // slots per thread

fn seq_index(t: u32) -> u32 {
  var lo = 0u;
  var hi = p.numSeqs;
  while (hi - lo > 1u) {
    let mid = (lo + hi) / 2u;
    if (seqStarts[mid] <= t) { lo = mid; } else { hi = mid; }
  }
  return lo;
}

fn quad_sum(x: f32) -> f32 {
  let y = x + quadSwapX(x);
  return y + quadSwapY(y);
}

// Slot of flat query row f (token f / group, head kvh·group + f % group).
fn row_slot(f: u32, kvh: u32) -> u32 {
  return ((f / p.group) * p.nHeads + kvh * p.group + f % p.group) * NS;
}

// ---- dkdv: 128 threads = 32 keys x 4 slices; query tiles of QT rows of every head of the group ----

const KEYS = 32u;
const QT = 16u;

var<workgroup> qTile: array<vec4f, QT * NS>;
var<workgroup> doTile: array<vec4f, QT * NS>;
var<workgroup> rowTok: array<u32, QT>;
var<workgroup> rowStart: array<u32, QT>;
var<workgroup> rowStat: array<vec2f, QT>;   // (lse2, D)
var<workgroup> rowRange: vec2u;

@compute @workgroup_size(128)
fn dkdv(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) tid: u32, @builtin(subgroup_invocation_id) lane: u32) {
  let kvh = wid.y;
  let key0 = wid.x * KEYS;
  let slice = lane & 3u;
  let key = key0 + tid / 4u;
  let kbase = (min(key, p.T - 1u) * p.nKv + kvh) * NS + slice;
  var kr: array<vec4f, J>;
  var vr: array<vec4f, J>;
  var gk: array<vec4f, J>;
  var gv: array<vec4f, J>;
  for (var j = 0u; j < J; j++) {
    kr[j] = k[kbase + 4u * j];
    vr[j] = v[kbase + 4u * j];
  }
  if (tid == 0u) {
    // Query rows from the first key's token to the end of the last key's sequence, all heads of the group.
    let last = min(key0 + KEYS, p.T) - 1u;
    rowRange = vec2u(key0 * p.group, seqStarts[seq_index(last) + 1u] * p.group);
  }
  let range = workgroupUniformLoad(&rowRange);
  for (var fb = range.x; fb < range.y; fb += QT) {
    if (tid < QT) {
      let f = fb + tid;
      if (f < range.y) {
        let st = stats[row_slot(f, kvh) / NS];
        rowTok[tid] = f / p.group;
        rowStart[tid] = bitcast<u32>(st.z);
        rowStat[tid] = st.xy;
      } else {
        rowTok[tid] = 0u;   // start 1 > token 0: no key passes the mask
        rowStart[tid] = 1u;
        rowStat[tid] = vec2f(0.0);
      }
    }
    for (var i = tid; i < QT * NS; i += 128u) {
      let f = fb + i / NS;
      var qq = vec4f(0.0);
      var gg = vec4f(0.0);
      if (f < range.y) {
        let b = row_slot(f, kvh) + i % NS;
        qq = q[b];
        gg = dO[b];
      }
      qTile[i] = qq;
      doTile[i] = gg;
    }
    workgroupBarrier();
    for (var r = 0u; r < QT; r++) {
      let a = r * NS + slice;
      var s = 0.0;
      var dp = 0.0;
      for (var j = 0u; j < J; j++) {
        s += dot(qTile[a + 4u * j], kr[j]);
        dp += dot(doTile[a + 4u * j], vr[j]);
      }
      s = quad_sum(s);
      dp = quad_sum(dp);
      let st = rowStat[r];
      let pr = select(0.0, exp2(s * p.scale2 - st.x), key >= rowStart[r] && key <= rowTok[r]);
      let ds = pr * (dp - st.y);
      for (var j = 0u; j < J; j++) {
        gv[j] += pr * doTile[a + 4u * j];
        gk[j] += ds * qTile[a + 4u * j];
      }
    }
    workgroupBarrier();
  }
  if (key < p.T) {
    for (var j = 0u; j < J; j++) {
      dk[kbase + 4u * j] = gk[j] * p.scale;
      dv[kbase + 4u * j] = gv[j];
    }
  }
}

// ---- dq: 128 threads = 32 flat query rows x 4 slices; key tiles of KT keys ----

const ROWS = 32u;
const KT = 16u;

var<workgroup> kTile: array<vec4f, KT * NS>;
var<workgroup> vTile: array<vec4f, KT * NS>;
var<workgroup> keyRange: vec2u;

@compute @workgroup_size(128)
fn dq_rows(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32,
           @builtin(subgroup_invocation_id) lane: u32) {
  let kvh = wid.y;
  let flat0 = (nwg.x - 1u - wid.x) * ROWS;   // last rows (most keys) start first
  let nRows = p.T * p.group;
  let slice = lane & 3u;
  let f = min(flat0 + tid / 4u, nRows - 1u);
  let t = f / p.group;
  let rbase = row_slot(f, kvh) + slice;
  let st = stats[row_slot(f, kvh) / NS];
  let start = bitcast<u32>(st.z);
  var qr: array<vec4f, J>;
  var gr: array<vec4f, J>;
  var acc: array<vec4f, J>;
  for (var j = 0u; j < J; j++) {
    qr[j] = q[rbase + 4u * j];
    gr[j] = dO[rbase + 4u * j];
  }
  if (tid == 0u) {
    // Keys from the first row's sequence start to the last row's token.
    let last = min(flat0 + ROWS, nRows) - 1u;
    keyRange = vec2u(bitcast<u32>(stats[row_slot(flat0, kvh) / NS].z), last / p.group + 1u);
  }
  let range = workgroupUniformLoad(&keyRange);
  for (var kb = range.x; kb < range.y; kb += KT) {
    for (var i = tid; i < KT * NS; i += 128u) {
      let key = kb + i / NS;
      var kk = vec4f(0.0);
      var vv = vec4f(0.0);
      if (key < range.y) {
        let b = (key * p.nKv + kvh) * NS + i % NS;
        kk = k[b];
        vv = v[b];
      }
      kTile[i] = kk;
      vTile[i] = vv;
    }
    workgroupBarrier();
    for (var c = 0u; c < KT; c++) {
      let a = c * NS + slice;
      var s = 0.0;
      var dp = 0.0;
      for (var j = 0u; j < J; j++) {
        s += dot(qr[j], kTile[a + 4u * j]);
        dp += dot(gr[j], vTile[a + 4u * j]);
      }
      s = quad_sum(s);
      dp = quad_sum(dp);
      let key = kb + c;
      let pr = select(0.0, exp2(s * p.scale2 - st.x), key >= start && key <= t);
      let ds = pr * (dp - st.y);
      for (var j = 0u; j < J; j++) { acc[j] += ds * kTile[a + 4u * j]; }
    }
    workgroupBarrier();
  }
  if (flat0 + tid / 4u < nRows) {
    for (var j = 0u; j < J; j++) { dq[rbase + 4u * j] = acc[j] * p.scale; }
  }
}
