// Qwen3's q_norm/k_norm and rotary embedding in one pass, in place on q [T, nHeads, HD] and k [T, nKv, HD]:
// each head row x becomes rope(w · x · rsqrt(mean(x²) + eps)) with the q or k norm weight w, exactly the
// composition of shaders/rmsnorm.wgsl (forward) and shaders/rope.wgsl (sign +1), with the normed value
// rounded to T between them as those two passes store it. Inference only: it keeps neither the
// pre-norm rows nor rstd, which a backward needs (training runs the two passes). Saves three of a
// decoder layer's dispatches (q norm, k norm, k rope); `to_cache` a fourth.
// A team of 32 lanes takes one row (lane l: pairs (i, i + half), i = l, l + 32, …); 4 rows a workgroup.
// Entry `to_cache` (decode and paged prefill) also does kv_write.wgsl's job: k rows go normed and rotated to
// their cache slots (not back into k), and v rows, after the k rows in the grid, are copied to theirs:
// one dispatch instead of two. CT: the cache's storage type.
struct Params { tokens: u32, nHeads: u32, nKv: u32, half: u32, eps: f32, _p0: u32, _p1: u32, _p2: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> q: array<T>;
@group(0) @binding(2) var<storage, read_write> k: array<T>;
@group(0) @binding(3) var<storage, read> qw: array<f32>;          // [HD]
@group(0) @binding(4) var<storage, read> kw: array<f32>;          // [HD]
@group(0) @binding(5) var<storage, read> positions: array<u32>;   // [T]
@group(0) @binding(6) var<storage, read> cos_table: array<f32>;   // [maxPos, half]
@group(0) @binding(7) var<storage, read> sin_table: array<f32>;
@group(0) @binding(8) var<storage, read> v: array<T>;
@group(0) @binding(9) var<storage, read> slots: array<u32>;    // [T]: cache slot of each token
@group(0) @binding(10) var<storage, read_write> kc: array<CT>;  // [slots, nKv, HD]
@group(0) @binding(11) var<storage, read_write> vc: array<CT>;

const LANES = 32u;
const ROWS = 4u;

var<workgroup> red: array<f32, LANES * ROWS>;

fn load(isQ: bool, i: u32) -> f32 {
  if (isQ) { return f32(q[i]); }
  return f32(k[i]);
}

fn store(isQ: bool, i: u32, x: f32) {
  if (isQ) { q[i] = T(x); } else { k[i] = T(x); }
}

fn weight(isQ: bool, i: u32) -> f32 {
  if (isQ) { return qw[i]; }
  return kw[i];
}

struct Row { isQ: bool, isV: bool, valid: bool, t: u32, base: u32 }

// Row `row` of the grid: q rows, then k rows, then (withV: to_cache) v rows.
fn grid_row(row: u32, withV: bool) -> Row {
  let qRows = p.tokens * p.nHeads;
  let kvRows = p.tokens * p.nKv;
  var r = Row(row < qRows, withV && row >= qRows + kvRows, false, 0u, 0u);
  r.valid = row < qRows + kvRows || (r.isV && row < qRows + 2u * kvRows);
  if (r.isQ) {
    r.t = row / p.nHeads;
    r.base = row * 2u * p.half;
  } else if (r.valid) {
    let kv = (row - qRows) % kvRows;
    r.t = kv / p.nKv;
    r.base = kv * 2u * p.half;
  }
  return r;
}

// rsqrt(mean(x²) + eps) of a q or k row, summed over its team (every thread of the workgroup calls it: barriers).
fn row_rstd(r: Row, tid: u32) -> f32 {
  let lane = tid % LANES;
  var ss = 0.0;
  if (r.valid && !r.isV) {
    for (var i = lane; i < p.half; i += LANES) {
      let a = load(r.isQ, r.base + i);
      let b = load(r.isQ, r.base + i + p.half);
      ss += a * a + b * b;
    }
  }
  red[tid] = ss;
  workgroupBarrier();
  for (var s = LANES / 2u; s > 0u; s >>= 1u) {
    if (lane < s) { red[tid] += red[tid + s]; }
    workgroupBarrier();
  }
  return inverseSqrt(red[(tid / LANES) * LANES] / f32(2u * p.half) + p.eps);
}

// The rotated pair (i, i + half) of a normed row: the normed value rounded to T first, as the two passes store it.
fn normed_pair(r: Row, i: u32, rs: f32) -> vec2f {
  let a = f32(T(weight(r.isQ, i) * (load(r.isQ, r.base + i) * rs)));
  let b = f32(T(weight(r.isQ, i + p.half) * (load(r.isQ, r.base + i + p.half) * rs)));
  let at = positions[r.t] * p.half + i;
  let c = cos_table[at];
  let sn = sin_table[at];
  return vec2f(a * c - b * sn, b * c + a * sn);
}

@compute @workgroup_size(128)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let r = grid_row((wid.x + wid.y * nwg.x) * ROWS + tid / LANES, false);
  let rs = row_rstd(r, tid);
  if (!r.valid) { return; }
  for (var i = tid % LANES; i < p.half; i += LANES) {
    let xy = normed_pair(r, i, rs);
    store(r.isQ, r.base + i, xy.x);
    store(r.isQ, r.base + i + p.half, xy.y);
  }
}

@compute @workgroup_size(128)
fn to_cache(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let r = grid_row((wid.x + wid.y * nwg.x) * ROWS + tid / LANES, true);
  let rs = row_rstd(r, tid);
  if (!r.valid) { return; }
  let lane = tid % LANES;
  if (r.isQ) {
    for (var i = lane; i < p.half; i += LANES) {
      let xy = normed_pair(r, i, rs);
      q[r.base + i] = T(xy.x);
      q[r.base + i + p.half] = T(xy.y);
    }
    return;
  }
  // The token's slot, then the row's kv head.
  let row = 2u * p.half * p.nKv;
  let dst = slots[r.t] * row + (r.base - r.t * row);
  if (r.isV) {
    for (var i = lane; i < 2u * p.half; i += LANES) { vc[dst + i] = CT(v[r.base + i]); }
    return;
  }
  for (var i = lane; i < p.half; i += LANES) {
    let xy = normed_pair(r, i, rs);
    kc[dst + i] = CT(T(xy.x));
    kc[dst + i + p.half] = CT(T(xy.y));
  }
}
