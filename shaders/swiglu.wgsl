// SwiGLU of the Qwen3 MLP: h = silu(gate) * up over [T, I]; backward gives d gate and d up.
// T is the storage type; math in f32. exp is clamped so sigmoid stays finite for very negative inputs.
struct Params { n: u32, _a: u32, _b: u32, _c: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> gate: array<T>;
@group(0) @binding(2) var<storage, read> up: array<T>;
@group(0) @binding(3) var<storage, read_write> h: array<T>;
@group(0) @binding(4) var<storage, read> dh: array<T>;
@group(0) @binding(5) var<storage, read_write> d_gate: array<T>;
@group(0) @binding(6) var<storage, read_write> d_up: array<T>;

fn index(gid: vec3u, nwg: vec3u) -> u32 { return gid.x + gid.y * nwg.x * 256u; }
fn sigmoid(v: f32) -> f32 { return 1.0 / (1.0 + exp(min(-v, 80.0))); }

@compute @workgroup_size(256)
fn forward(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = index(gid, nwg);
  if (i >= p.n) { return; }
  let g = f32(gate[i]);
  h[i] = T(g * sigmoid(g) * f32(up[i]));
}

// d gate = dh · up · silu'(g), silu'(g) = s·(1 + g·(1 − s)); d up = dh · silu(g).
@compute @workgroup_size(256)
fn backward(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = index(gid, nwg);
  if (i >= p.n) { return; }
  let g = f32(gate[i]);
  let s = sigmoid(g);
  let d = f32(dh[i]);
  d_gate[i] = T(d * f32(up[i]) * s * (1.0 + g * (1.0 - s)));
  d_up[i] = T(d * g * s);
}
