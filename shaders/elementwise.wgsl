// Elementwise ops over n values; T is the storage type (f32, or f16 when shader-f16 exists).
// Math runs in f32 either way. One thread per element, 256 per workgroup, 2-D grid for n > 65535*256.
struct Params { n: u32, scale: f32, row: u32, _pad: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<T>;
@group(0) @binding(2) var<storage, read> b: array<T>;
@group(0) @binding(3) var<storage, read_write> out: array<T>;

fn index(gid: vec3u, nwg: vec3u) -> u32 { return gid.x + gid.y * nwg.x * 256u; }

@compute @workgroup_size(256)
fn add(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = index(gid, nwg);
  if (i < p.n) { out[i] = T(f32(a[i]) + f32(b[i])); }
}

@compute @workgroup_size(256)
fn mul(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = index(gid, nwg);
  if (i < p.n) { out[i] = T(f32(a[i]) * f32(b[i])); }
}

// out = a * scale.
@compute @workgroup_size(256)
fn scale(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = index(gid, nwg);
  if (i < p.n) { out[i] = T(f32(a[i]) * p.scale); }
}

// out = silu(a) = a * sigmoid(a); written as a / (1 + exp(-a)) with exp clamped to stay finite.
@compute @workgroup_size(256)
fn silu(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = index(gid, nwg);
  if (i < p.n) {
    let x = f32(a[i]);
    out[i] = T(x / (1.0 + exp(min(-x, 80.0))));
  }
}

// out[i] = a[i] + b[i % row]: adds a row vector (a bias) to every row.
@compute @workgroup_size(256)
fn add_row(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = index(gid, nwg);
  if (i < p.n) { out[i] = T(f32(a[i]) + f32(b[i % p.row])); }
}
