// Sum of squares of gradients, deterministic: each tensor is cut into a fixed number of workgroups that
// write partial sums at fixed places (partial_sumsq); one workgroup then sums all partials (total).
struct Params { n: u32, offset: u32, n_partials: u32, _pad: u32 }

const WG = 256u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> grad: array<f32>;
@group(0) @binding(2) var<storage, read_write> partials: array<f32>;
@group(0) @binding(3) var<storage, read_write> total: array<f32>;

var<workgroup> acc: array<f32, WG>;

fn reduce(lid: u32) {
  for (var stride = WG / 2u; stride > 0u; stride = stride / 2u) {
    workgroupBarrier();
    if (lid < stride) { acc[lid] += acc[lid + stride]; }
  }
  workgroupBarrier();
}

// partials[offset + w] = Σ grad[i]² over i ≡ w·WG + lid (mod num_workgroups·WG).
@compute @workgroup_size(WG)
fn partial_sumsq(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) lid: u32) {
  var s = 0.0;
  for (var i = wid.x * WG + lid; i < p.n; i += nwg.x * WG) {
    let g = grad[i];
    s += g * g;
  }
  acc[lid] = s;
  reduce(lid);
  if (lid == 0u) { partials[p.offset + wid.x] = acc[0]; }
}

@compute @workgroup_size(WG)
fn total_sumsq(@builtin(local_invocation_index) lid: u32) {
  var s = 0.0;
  for (var i = lid; i < p.n_partials; i += WG) { s += partials[i]; }
  acc[lid] = s;
  reduce(lid);
  if (lid == 0u) { total[0] = acc[0]; }
}
