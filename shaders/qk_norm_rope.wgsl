// Qwen3's q_norm/k_norm and rotary embedding in one pass, in place on q [T, nHeads, HD] and k [T, nKv, HD]:
// each head row x becomes rope(w · x · rsqrt(mean(x²) + eps)) with the q or k norm weight w, exactly the
// composition of shaders/rmsnorm.wgsl (forward) and shaders/rope.wgsl (sign +1), with the normed value
// rounded to T between them as those two passes store it. Inference only: it keeps neither the
// pre-norm rows nor rstd, which a backward needs (training runs the two passes). Saves three of a
// decoder layer's dispatches (q norm, k norm, k rope).
// A team of 32 lanes takes one row (lane l: pairs (i, i + half), i = l, l + 32, …); 4 rows a workgroup.
struct Params { tokens: u32, nHeads: u32, nKv: u32, half: u32, eps: f32, _p0: u32, _p1: u32, _p2: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> q: array<T>;
@group(0) @binding(2) var<storage, read_write> k: array<T>;
@group(0) @binding(3) var<storage, read> qw: array<f32>;          // [HD]
@group(0) @binding(4) var<storage, read> kw: array<f32>;          // [HD]
@group(0) @binding(5) var<storage, read> positions: array<u32>;   // [T]
@group(0) @binding(6) var<storage, read> cos_table: array<f32>;   // [maxPos, half]
@group(0) @binding(7) var<storage, read> sin_table: array<f32>;

const LANES = 32u;
const ROWS = 4u;

var<workgroup> red: array<f32, LANES * ROWS>;

fn load(isQ: bool, i: u32) -> f32 {
  if (isQ) { return f32(q[i]); }
  return f32(k[i]);
}

fn store(isQ: bool, i: u32, v: f32) {
  if (isQ) { q[i] = T(v); } else { k[i] = T(v); }
}

fn weight(isQ: bool, i: u32) -> f32 {
  if (isQ) { return qw[i]; }
  return kw[i];
}

@compute @workgroup_size(128)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let team = tid / LANES;
  let lane = tid % LANES;
  let qRows = p.tokens * p.nHeads;
  let row = (wid.x + wid.y * nwg.x) * ROWS + team;
  // Rows past the end still take part in the barriers below.
  let valid = row < qRows + p.tokens * p.nKv;
  let isQ = row < qRows;
  var t = 0u;
  var base = 0u;
  if (isQ) {
    t = row / p.nHeads;
    base = row * 2u * p.half;
  } else if (valid) {
    t = (row - qRows) / p.nKv;
    base = (row - qRows) * 2u * p.half;
  }
  var ss = 0.0;
  if (valid) {
    for (var i = lane; i < p.half; i += LANES) {
      let a = load(isQ, base + i);
      let b = load(isQ, base + i + p.half);
      ss += a * a + b * b;
    }
  }
  red[tid] = ss;
  workgroupBarrier();
  for (var s = LANES / 2u; s > 0u; s >>= 1u) {
    if (lane < s) { red[tid] += red[tid + s]; }
    workgroupBarrier();
  }
  if (!valid) { return; }
  let rs = inverseSqrt(red[team * LANES] / f32(2u * p.half) + p.eps);
  let pos = positions[t] * p.half;
  for (var i = lane; i < p.half; i += LANES) {
    let a = f32(T(weight(isQ, i) * (load(isQ, base + i) * rs)));
    let b = f32(T(weight(isQ, i + p.half) * (load(isQ, base + i + p.half) * rs)));
    let c = cos_table[pos + i];
    let sn = sin_table[pos + i];
    store(isQ, base + i, a * c - b * sn);
    store(isQ, base + i + p.half, b * c + a * sn);
  }
}
