// Row softmax over the last dimension, x [rows, n] -> y [rows, n] (storage T: f32 or f16, math f32),
// and its backward dx = y ⊙ (dy − Σ dy·y). One workgroup of 256 threads per row. The forward keeps a
// running (max, sum of exp) per thread, merged in a tree, so x is read twice (not three times).
struct Params { rows: u32, n: u32, _p0: u32, _p1: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<T>;   // forward: x; backward: y
@group(0) @binding(2) var<storage, read> dy: array<T>;  // backward only
@group(0) @binding(3) var<storage, read_write> out: array<T>;

// Finite stand-in for -inf: exp(v - LOWEST) stays well defined when a row holds -inf (masked) entries.
const LOWEST = -3.4028234e38; // rounds to -FLT_MAX

var<workgroup> partMax: array<f32, 256>;
var<workgroup> partSum: array<f32, 256>;

fn rowIndex(wg: vec3u, nwg: vec3u) -> u32 { return wg.x + wg.y * nwg.x; }

@compute @workgroup_size(256)
fn forward(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let row = rowIndex(wg, nwg);
  if (row >= p.rows) { return; }
  let base = row * p.n;
  var m = LOWEST;
  var s = 0.0;
  for (var i = tid; i < p.n; i += 256u) {
    let v = f32(x[base + i]);
    if (v > m) {
      s = s * exp(m - v) + 1.0;
      m = v;
    } else {
      s += exp(v - m);
    }
  }
  partMax[tid] = m;
  partSum[tid] = s;
  workgroupBarrier();
  for (var st = 128u; st > 0u; st >>= 1u) {
    if (tid < st) {
      let m1 = partMax[tid];
      let m2 = partMax[tid + st];
      let mm = max(m1, m2);
      partSum[tid] = partSum[tid] * exp(m1 - mm) + partSum[tid + st] * exp(m2 - mm);
      partMax[tid] = mm;
    }
    workgroupBarrier();
  }
  let rowMax = partMax[0];
  let inv = 1.0 / partSum[0];
  for (var i = tid; i < p.n; i += 256u) { out[base + i] = T(exp(f32(x[base + i]) - rowMax) * inv); }
}

@compute @workgroup_size(256)
fn backward(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let row = rowIndex(wg, nwg);
  if (row >= p.rows) { return; }
  let base = row * p.n;
  var d = 0.0;
  for (var i = tid; i < p.n; i += 256u) { d += f32(dy[base + i]) * f32(x[base + i]); }
  partSum[tid] = d;
  workgroupBarrier();
  for (var st = 128u; st > 0u; st >>= 1u) {
    if (tid < st) { partSum[tid] += partSum[tid + st]; }
    workgroupBarrier();
  }
  let total = partSum[0];
  for (var i = tid; i < p.n; i += 256u) {
    let y = f32(x[base + i]);
    out[base + i] = T(y * (f32(dy[base + i]) - total));
  }
}
