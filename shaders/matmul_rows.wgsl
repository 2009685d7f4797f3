// Small-M matmul against a transposed weight: out[M, N] = alpha·a·bᵀ (+ out when accumulate), with
// a [M, K], b [N, K] (nn.Linear weight [out, in]), M <= 16, K a multiple of 4. Decode-shaped and memory
// bound: each weight element is read once, as a vec4, and used for all M rows. A workgroup of 8 groups
// of 32 threads makes 8 output columns; a group's threads stride over K and their partial sums are added
// through workgroup memory. Rows are handled 4 at a time in named vec4 accumulators. ROWS (= M) is a
// compile-time constant, so unused row groups vanish and clamped duplicate row reads fold away.
struct Params { M: u32, N: u32, K: u32, accumulate: u32, alpha: f32, _p0: u32, _p1: u32, _p2: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<vec4<TA>>;
@group(0) @binding(2) var<storage, read> b: array<vec4<TB>>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

const ROW_GROUPS = (ROWS + 3u) / 4u;
const COLS = 8u;
const LANES = 32u;

var<workgroup> partial: array<vec4<f32>, 1024>; // [ROW_GROUPS <= 4][256 threads]

// w · a[m, 4k4..4k4+3] for rows r0..r0+3 (clamped to ROWS-1; rows past M are computed but never stored).
fn dots(w: vec4<f32>, r0: u32, k4: u32, K4: u32) -> vec4<f32> {
  let last = ROWS - 1u;
  return vec4<f32>(
    dot(w, vec4<f32>(a[min(r0, last) * K4 + k4])),
    dot(w, vec4<f32>(a[min(r0 + 1u, last) * K4 + k4])),
    dot(w, vec4<f32>(a[min(r0 + 2u, last) * K4 + k4])),
    dot(w, vec4<f32>(a[min(r0 + 3u, last) * K4 + k4])),
  );
}

// dots over four weight vec4s at k4, k4 + LANES, k4 + 2·LANES, k4 + 3·LANES.
fn dots4(w0: vec4<f32>, w1: vec4<f32>, w2: vec4<f32>, w3: vec4<f32>, r0: u32, k4: u32, K4: u32) -> vec4<f32> {
  return dots(w0, r0, k4, K4) + dots(w1, r0, k4 + LANES, K4) + dots(w2, r0, k4 + 2u * LANES, K4) + dots(w3, r0, k4 + 3u * LANES, K4);
}

fn store(m: u32, n: u32, v: f32) {
  if (m >= ROWS) { return; }
  var r = p.alpha * v;
  if (p.accumulate != 0u) { r += out[m * p.N + n]; }
  out[m * p.N + n] = r;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let tid = lid.x;
  let lane = tid % LANES;
  let n = wg.x * COLS + tid / LANES;
  let K4 = p.K / 4u;
  var acc0 = vec4<f32>(0.0);
  var acc1 = vec4<f32>(0.0);
  var acc2 = vec4<f32>(0.0);
  var acc3 = vec4<f32>(0.0);
  if (n < p.N) {
    // four weight loads in flight per thread: latency, not bandwidth, limits one load per step
    var k4 = lane;
    for (; k4 + 3u * LANES < K4; k4 += 4u * LANES) {
      let w0 = vec4<f32>(b[n * K4 + k4]);
      let w1 = vec4<f32>(b[n * K4 + k4 + LANES]);
      let w2 = vec4<f32>(b[n * K4 + k4 + 2u * LANES]);
      let w3 = vec4<f32>(b[n * K4 + k4 + 3u * LANES]);
      acc0 += dots4(w0, w1, w2, w3, 0u, k4, K4);
      if (ROW_GROUPS > 1u) { acc1 += dots4(w0, w1, w2, w3, 4u, k4, K4); }
      if (ROW_GROUPS > 2u) { acc2 += dots4(w0, w1, w2, w3, 8u, k4, K4); }
      if (ROW_GROUPS > 3u) { acc3 += dots4(w0, w1, w2, w3, 12u, k4, K4); }
    }
    for (; k4 < K4; k4 += LANES) {
      let w = vec4<f32>(b[n * K4 + k4]);
      acc0 += dots(w, 0u, k4, K4);
      if (ROW_GROUPS > 1u) { acc1 += dots(w, 4u, k4, K4); }
      if (ROW_GROUPS > 2u) { acc2 += dots(w, 8u, k4, K4); }
      if (ROW_GROUPS > 3u) { acc3 += dots(w, 12u, k4, K4); }
    }
  }
  partial[tid] = acc0;
  if (ROW_GROUPS > 1u) { partial[256u + tid] = acc1; }
  if (ROW_GROUPS > 2u) { partial[512u + tid] = acc2; }
  if (ROW_GROUPS > 3u) { partial[768u + tid] = acc3; }
  workgroupBarrier();
  for (var stride = LANES / 2u; stride > 0u; stride /= 2u) {
    if (lane < stride) {
      for (var g = 0u; g < ROW_GROUPS; g++) {
        partial[g * 256u + tid] += partial[g * 256u + tid + stride];
      }
    }
    workgroupBarrier();
  }
  if (lane == 0u && n < p.N) {
    for (var g = 0u; g < ROW_GROUPS; g++) {
      let s = partial[g * 256u + tid];
      store(g * 4u, n, s.x);
      store(g * 4u + 1u, n, s.y);
      store(g * 4u + 2u, n, s.z);
      store(g * 4u + 3u, n, s.w);
    }
  }
}
