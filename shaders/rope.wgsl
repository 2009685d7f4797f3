// Rotary position embedding, Hugging Face rotate-half form, in place on x [T, heads, headDim]:
// for i < half: x[i] ← x[i]·cos − x[i+half]·sin, x[i+half] ← x[i+half]·cos + x[i]·sin,
// with cos/sin read from f32 tables [maxPos, half] made on the CPU (GPU sin/cos of large angles is
// inaccurate). The backward is the rotation by −θ: the same kernel with sign = −1.
struct Params { tokens: u32, heads: u32, half: u32, sign: f32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> x: array<T>;
@group(0) @binding(2) var<storage, read> positions: array<u32>; // [T]
@group(0) @binding(3) var<storage, read> cos_table: array<f32>; // [maxPos, half]
@group(0) @binding(4) var<storage, read> sin_table: array<f32>;

// One thread per (token, head, i < half).
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let idx = gid.x + gid.y * nwg.x * 256u;
  if (idx >= p.tokens * p.heads * p.half) { return; }
  let i = idx % p.half;
  let th = idx / p.half; // token * heads + head
  let t = th / p.heads;
  let tab = positions[t] * p.half + i;
  let c = cos_table[tab];
  let s = p.sign * sin_table[tab];
  let lo = th * 2u * p.half + i;
  let hi = lo + p.half;
  let a = f32(x[lo]);
  let b = f32(x[hi]);
  x[lo] = T(a * c - b * s);
  x[hi] = T(b * c + a * s);
}
