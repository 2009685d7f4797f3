// out[i] = mean + std * z with z ~ N(0, 1) from a counter-based hash of (seed, i): the same numbers on
// every device and for every dispatch order. Box-Muller on two 24-bit uniforms. For random weights.
struct Params { n: u32, seed: u32, mean: f32, stddev: f32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> out: array<T>;

// lowbias32 (Chris Wellons): a well-mixed 32-bit integer hash.
fn hash(v: u32) -> u32 {
  var x = v;
  x ^= x >> 16u;
  x *= 0x7feb352du;
  x ^= x >> 15u;
  x *= 0x846ca68bu;
  x ^= x >> 16u;
  return x;
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * 256u;
  if (i >= p.n) { return; }
  let h1 = hash(i ^ hash(p.seed));
  let h2 = hash(h1 ^ 0x9e3779b9u);
  let u1 = (f32(h1 >> 8u) + 0.5) / 16777216.0; // (0, 1): log stays finite
  let u2 = f32(h2 >> 8u) / 16777216.0;
  let z = sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
  out[i] = T(p.mean + p.stddev * z);
}
