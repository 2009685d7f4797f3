// Row reductions over the last dimension: x [rows, n] (storage T: f32 or f16) -> out [rows] f32.
// One workgroup of 256 threads per row: each thread folds a strided slice, then a tree in workgroup
// memory. Rows past 65535 workgroups spill into the grid's y dimension.
struct Params { rows: u32, n: u32, _p0: u32, _p1: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<T>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

const SUM = 0u;
const MAX = 1u;
const SUMSQ = 2u;

var<workgroup> part: array<f32, 256>;

fn combine(op: u32, u: f32, v: f32) -> f32 {
  if (op == MAX) { return max(u, v); }
  return u + v;
}

fn term(op: u32, v: f32) -> f32 {
  if (op == SUMSQ) { return v * v; }
  return v;
}

fn reduceRow(op: u32, wg: vec3u, nwg: vec3u, tid: u32) {
  let row = wg.x + wg.y * nwg.x;
  if (row >= p.rows) { return; } // whole workgroup leaves together: barriers stay uniform
  let base = row * p.n;
  // max starts from the row's first element (not a sentinel) so rows of -inf reduce to -inf.
  var acc = select(0.0, f32(x[base]), op == MAX);
  for (var i = tid; i < p.n; i += 256u) { acc = combine(op, acc, term(op, f32(x[base + i]))); }
  part[tid] = acc;
  workgroupBarrier();
  for (var s = 128u; s > 0u; s >>= 1u) {
    if (tid < s) { part[tid] = combine(op, part[tid], part[tid + s]); }
    workgroupBarrier();
  }
  if (tid == 0u) { out[row] = part[0]; }
}

@compute @workgroup_size(256)
fn row_sum(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  reduceRow(SUM, wg, nwg, tid);
}

@compute @workgroup_size(256)
fn row_max(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  reduceRow(MAX, wg, nwg, tid);
}

@compute @workgroup_size(256)
fn row_sumsq(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  reduceRow(SUMSQ, wg, nwg, tid);
}
