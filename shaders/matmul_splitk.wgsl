// Second pass of a split-K matmul: out[i] = alpha · Σ_z partial[z, i] (+ out[i] when accumulate), over
// the M·N outputs; the partial slices come from shaders/matmul_tile64.wgsl with workgroups along z.
struct Params { count: u32, splits: u32, accumulate: u32, alpha: f32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> partial: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * 256u;
  if (i >= p.count) { return; }
  var s = 0.0;
  for (var z = 0u; z < p.splits; z++) { s += partial[z * p.count + i]; }
  var r = p.alpha * s;
  if (p.accumulate != 0u) { r += out[i]; }
  out[i] = r;
}
