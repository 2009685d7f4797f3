// RMSNorm over the last dimension, as Hugging Face Qwen3RMSNorm computes it in f32:
// y = w * (x * rsqrt(mean(x²) + eps)). Rows are [T, H] rows or, for q_norm/k_norm, the heads of
// [T, heads, headDim] (n = headDim). T is the activation storage type; weights and rstd are f32.
// One workgroup per row for forward and dx; rows of at most ROWWISE_MAX_N (a tiny model's hidden size
// or head_dim) take one thread per row instead, since a 128-thread workgroup would idle most of its
// threads on them and its barriers dominate (on CPU drivers, 20x). dw is reduced deterministically in two
// passes (per-chunk partial sums, then a sum over chunks), with no float atomics.
// forward_add / forward_add_rowwise fuse the residual add before the norm (h = x + addend, y = norm(h)): a
// decoder layer's `x + o_proj(…)` and the next post-attention / input norm are one pass instead of two.
const WG = 128u;
const CHUNK = 256u; // rows per dw partial sum

struct Params { rows: u32, n: u32, eps: f32, accumulate: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<T>;                 // [rows, n]
@group(0) @binding(2) var<storage, read> w: array<f32>;               // [n]
@group(0) @binding(3) var<storage, read_write> y: array<T>;           // [rows, n]
@group(0) @binding(4) var<storage, read_write> rstd: array<f32>;      // [rows], saved for backward
@group(0) @binding(5) var<storage, read> dy: array<T>;                // [rows, n]
@group(0) @binding(6) var<storage, read_write> dx: array<T>;          // [rows, n]
@group(0) @binding(7) var<storage, read_write> dw_partial: array<f32>; // [ceil(rows / CHUNK), n]
@group(0) @binding(8) var<storage, read_write> dw: array<f32>;        // [n]
@group(0) @binding(9) var<storage, read> addend: array<T>;            // [rows, n] residual addend (forward_add)
@group(0) @binding(10) var<storage, read_write> h: array<T>;          // [rows, n] x + addend (forward_add)

var<workgroup> red: array<f32, WG>;

// Sum of v over the workgroup (all threads get it).
fn workgroup_sum(v: f32, lid: u32) -> f32 {
  red[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) { red[lid] += red[lid + s]; }
    workgroupBarrier();
  }
  let total = red[0];
  workgroupBarrier();
  return total;
}

@compute @workgroup_size(WG)
fn forward(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let row = wid.x + wid.y * nwg.x;
  if (row >= p.rows) { return; }
  let base = row * p.n;
  var ss = 0.0;
  for (var i = lid; i < p.n; i += WG) {
    let v = f32(x[base + i]);
    ss += v * v;
  }
  let s = inverseSqrt(workgroup_sum(ss, lid) / f32(p.n) + p.eps);
  for (var i = lid; i < p.n; i += WG) {
    y[base + i] = T(w[i] * (f32(x[base + i]) * s));
  }
  if (lid == 0u) { rstd[row] = s; }
}

// The sum is rounded to T before the norm reads it, as a separate add would store it.
@compute @workgroup_size(WG)
fn forward_add(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let row = wid.x + wid.y * nwg.x;
  if (row >= p.rows) { return; }
  let base = row * p.n;
  var ss = 0.0;
  for (var i = lid; i < p.n; i += WG) {
    let v = x[base + i] + addend[base + i];
    h[base + i] = v;
    ss += f32(v) * f32(v);
  }
  let s = inverseSqrt(workgroup_sum(ss, lid) / f32(p.n) + p.eps);
  for (var i = lid; i < p.n; i += WG) {
    y[base + i] = T(w[i] * (f32(x[base + i] + addend[base + i]) * s));
  }
  if (lid == 0u) { rstd[row] = s; }
}

// dx = rstd * (w·dy − x̂ · mean(w·dy·x̂)), x̂ = x·rstd.
@compute @workgroup_size(WG)
fn backward_dx(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let row = wid.x + wid.y * nwg.x;
  if (row >= p.rows) { return; }
  let base = row * p.n;
  let r = rstd[row];
  var dot = 0.0;
  for (var i = lid; i < p.n; i += WG) {
    dot += w[i] * f32(dy[base + i]) * f32(x[base + i]) * r;
  }
  let c = workgroup_sum(dot, lid) / f32(p.n);
  for (var i = lid; i < p.n; i += WG) {
    let xh = f32(x[base + i]) * r;
    dx[base + i] = T(r * (w[i] * f32(dy[base + i]) - xh * c));
  }
}

// The same two passes with one thread per row (rows of at most ROWWISE_MAX_N elements, src/kernels/rmsnorm.ts).
@compute @workgroup_size(64)
fn forward_rowwise(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let row = gid.x + gid.y * nwg.x * 64u;
  if (row >= p.rows) { return; }
  let base = row * p.n;
  var ss = 0.0;
  for (var i = 0u; i < p.n; i++) {
    let v = f32(x[base + i]);
    ss += v * v;
  }
  let s = inverseSqrt(ss / f32(p.n) + p.eps);
  for (var i = 0u; i < p.n; i++) {
    y[base + i] = T(w[i] * (f32(x[base + i]) * s));
  }
  rstd[row] = s;
}

@compute @workgroup_size(64)
fn forward_add_rowwise(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let row = gid.x + gid.y * nwg.x * 64u;
  if (row >= p.rows) { return; }
  let base = row * p.n;
  var ss = 0.0;
  for (var i = 0u; i < p.n; i++) {
    let v = x[base + i] + addend[base + i];
    h[base + i] = v;
    ss += f32(v) * f32(v);
  }
  let s = inverseSqrt(ss / f32(p.n) + p.eps);
  for (var i = 0u; i < p.n; i++) {
    y[base + i] = T(w[i] * (f32(x[base + i] + addend[base + i]) * s));
  }
  rstd[row] = s;
}

@compute @workgroup_size(64)
fn backward_dx_rowwise(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let row = gid.x + gid.y * nwg.x * 64u;
  if (row >= p.rows) { return; }
  let base = row * p.n;
  let r = rstd[row];
  var dot = 0.0;
  for (var i = 0u; i < p.n; i++) {
    dot += w[i] * f32(dy[base + i]) * f32(x[base + i]) * r;
  }
  let c = dot / f32(p.n);
  for (var i = 0u; i < p.n; i++) {
    let xh = f32(x[base + i]) * r;
    dx[base + i] = T(r * (w[i] * f32(dy[base + i]) - xh * c));
  }
}

// dw_partial[chunk, j] = sum over the chunk's rows of dy·x̂; one thread per (chunk, j).
@compute @workgroup_size(256)
fn backward_dw_partial(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * 256u;
  let chunks = (p.rows + CHUNK - 1u) / CHUNK;
  if (i >= chunks * p.n) { return; }
  let chunk = i / p.n;
  let j = i - chunk * p.n;
  let end = min(p.rows, (chunk + 1u) * CHUNK);
  var acc = 0.0;
  for (var row = chunk * CHUNK; row < end; row++) {
    acc += f32(dy[row * p.n + j]) * f32(x[row * p.n + j]) * rstd[row];
  }
  dw_partial[i] = acc;
}

// dw[j] (+)= sum over chunks of dw_partial[chunk, j].
@compute @workgroup_size(256)
fn backward_dw_reduce(@builtin(global_invocation_id) gid: vec3u) {
  let j = gid.x;
  if (j >= p.n) { return; }
  let chunks = (p.rows + CHUNK - 1u) / CHUNK;
  var acc = 0.0;
  for (var c = 0u; c < chunks; c++) { acc += dw_partial[c * p.n + j]; }
  if (p.accumulate != 0u) { acc += dw[j]; }
  dw[j] = acc;
}
