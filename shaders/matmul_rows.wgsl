// Small-M matmul against a transposed weight: out[M, N] = alpha·a·bᵀ (+ out when accumulate), with
// a [M, K], b [N, K] (nn.Linear weight [out, in]), M <= 16, K a multiple of 4. Decode-shaped and memory
// bound: each weight element is read once, as a vec4, and used for all M rows. A workgroup of 8 groups
// of 32 threads makes 8 output columns; a group's threads stride over K and their partial sums are added
// by subgroup shuffles where subgroups exist, the rest through workgroup memory (laneSums). Rows are handled 4 at
// a time in named vec4 accumulators. ROWS (= M) is a compile-time constant, so unused row groups vanish and
// clamped duplicate row reads fold away.
// MULTI / THREE: the same a against two or three weights in one dispatch (q, k and v; gate and up), each into
// its own out, plain products only (alpha 1, no accumulation); the workgroups go to the weights in order.
// GLU: a is the MLP's gate and aUp its up, and the product is silu(gate) * up against b (down_proj), so
// SwiGLU needs no pass of its own (same sigmoid as swiglu.wgsl).
// NORM: a is a residual stream and the product's input is its RMSNorm, a·rstd·gamma (rmsnorm.wgsl's), so the norm
// needs no pass of its own: the dots take a·gamma, the same loop sums each row's squares (its 32 lanes cover
// K), and rstd multiplies the reduced sums. Every column group computes the same rstd.
struct Params { M: u32, N: u32, K: u32, accumulate: u32, alpha: f32, N2: u32, N3: u32, eps: f32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<vec4<TA>>;
@group(0) @binding(2) var<storage, read> b: array<vec4<TB>>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
#if MULTI
@group(0) @binding(4) var<storage, read> b2: array<vec4<TB>>;
@group(0) @binding(5) var<storage, read_write> out2: array<f32>;
#endif
#if THREE
@group(0) @binding(6) var<storage, read> b3: array<vec4<TB>>;
@group(0) @binding(7) var<storage, read_write> out3: array<f32>;
#endif
#if GLU
@group(0) @binding(8) var<storage, read> aUp: array<vec4<TA>>;
#endif
#if NORM
@group(0) @binding(9) var<storage, read> gamma: array<vec4<f32>>;
#endif

const ROW_GROUPS = (ROWS + 3u) / 4u;
const COLS = 8u;
const LANES = 32u;
const WU = 8u;       // weight loads a thread has in flight

var<workgroup> partial: array<vec4<f32>, 1024>; // [ROW_GROUPS <= 4][256 threads]

// The product's input at vec4 k4 of row m: a, silu(gate) * up (GLU), or a·gamma (NORM; rstd comes later).
fn ain(m: u32, k4: u32, K4: u32) -> vec4<f32> {
  let i = m * K4 + k4;
#if GLU
  let g = vec4<f32>(a[i]);
  return g * (1.0 / (1.0 + exp(min(-g, vec4<f32>(80.0))))) * vec4<f32>(aUp[i]);
#else
#if NORM
  return vec4<f32>(a[i]) * gamma[k4];
#else
  return vec4<f32>(a[i]);
#endif
#endif
}

// w · a[m, 4k4..4k4+3] for rows r0..r0+3 (clamped to ROWS-1; rows past M are computed but never stored).
fn dots(w: vec4<f32>, r0: u32, k4: u32, K4: u32) -> vec4<f32> {
  let last = ROWS - 1u;
  return vec4<f32>(
    dot(w, ain(min(r0, last), k4, K4)),
    dot(w, ain(min(r0 + 1u, last), k4, K4)),
    dot(w, ain(min(r0 + 2u, last), k4, K4)),
    dot(w, ain(min(r0 + 3u, last), k4, K4)),
  );
}

// Σ a² over a[m, 4k4..4k4+3] for rows r0..r0+3 (NORM's sums of squares, clamped like dots).
fn squares(r0: u32, k4: u32, K4: u32) -> vec4<f32> {
  let last = ROWS - 1u;
  let x0 = vec4<f32>(a[min(r0, last) * K4 + k4]);
  let x1 = vec4<f32>(a[min(r0 + 1u, last) * K4 + k4]);
  let x2 = vec4<f32>(a[min(r0 + 2u, last) * K4 + k4]);
  let x3 = vec4<f32>(a[min(r0 + 3u, last) * K4 + k4]);
  return vec4<f32>(dot(x0, x0), dot(x1, x1), dot(x2, x2), dot(x3, x3));
}

struct Sums { s0: vec4<f32>, s1: vec4<f32>, s2: vec4<f32>, s3: vec4<f32> }

// Each group's sums over its 32 lanes of v (row groups past ROW_GROUPS untouched), right in lane 0: first across
// SGL neighbouring lanes by subgroup shuffles (SGR; SGL the least subgroup size, at most 32), then the rest
// through workgroup memory, which at SGL 32 takes no barrier at all.
fn laneSums(v: Sums, tid: u32, lane: u32) -> Sums {
  var s = v;
#if SGR
  for (var o = SGL / 2u; o > 0u; o >>= 1u) {
    s.s0 += subgroupShuffleXor(s.s0, o);
    if (ROW_GROUPS > 1u) { s.s1 += subgroupShuffleXor(s.s1, o); }
    if (ROW_GROUPS > 2u) { s.s2 += subgroupShuffleXor(s.s2, o); }
    if (ROW_GROUPS > 3u) { s.s3 += subgroupShuffleXor(s.s3, o); }
  }
#endif
  if (SGL < LANES) {
    partial[tid] = s.s0;
    if (ROW_GROUPS > 1u) { partial[256u + tid] = s.s1; }
    if (ROW_GROUPS > 2u) { partial[512u + tid] = s.s2; }
    if (ROW_GROUPS > 3u) { partial[768u + tid] = s.s3; }
    workgroupBarrier();
    for (var stride = LANES / 2u; stride >= SGL; stride /= 2u) {
      if (lane < stride) {
        for (var g = 0u; g < ROW_GROUPS; g++) {
          partial[g * 256u + tid] += partial[g * 256u + tid + stride];
        }
      }
      workgroupBarrier();
    }
    // Every thread reads (and a next call writes) only its own slots until that call's first barrier.
    s.s0 = partial[tid];
    if (ROW_GROUPS > 1u) { s.s1 = partial[256u + tid]; }
    if (ROW_GROUPS > 2u) { s.s2 = partial[512u + tid]; }
    if (ROW_GROUPS > 3u) { s.s3 = partial[768u + tid]; }
  }
  return s;
}

// Weight `part` (0: b, 1: b2, 2: b3), vec4 i. `part` is the workgroup's: no divergence.
fn wload(part: u32, i: u32) -> vec4<f32> {
#if MULTI
  if (part == 1u) { return vec4<f32>(b2[i]); }
#endif
#if THREE
  if (part == 2u) { return vec4<f32>(b3[i]); }
#endif
  return vec4<f32>(b[i]);
}

fn store(part: u32, m: u32, n: u32, N: u32, v: f32) {
  if (m >= ROWS) { return; }
#if MULTI
  if (part == 1u) { out2[m * N + n] = v; return; }
#endif
#if THREE
  if (part == 2u) { out3[m * N + n] = v; return; }
#endif
  var r = p.alpha * v;
  if (p.accumulate != 0u) { r += out[m * p.N + n]; }
  out[m * p.N + n] = r;
}

fn storeRows(part: u32, m0: u32, n: u32, N: u32, s: vec4<f32>) {
  store(part, m0, n, N, s.x);
  store(part, m0 + 1u, n, N, s.y);
  store(part, m0 + 2u, n, N, s.z);
  store(part, m0 + 3u, n, N, s.w);
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let tid = lid.x;
  let lane = tid % LANES;
  var part = 0u;
  var w = wg.x;
  var N = p.N;
#if MULTI
  let groups1 = (p.N + COLS - 1u) / COLS;
  if (w >= groups1) {
    w -= groups1;
    part = 1u;
    N = p.N2;
    let groups2 = (p.N2 + COLS - 1u) / COLS;
    if (w >= groups2) {
      w -= groups2;
      part = 2u;
      N = p.N3;
    }
  }
#endif
  let n = w * COLS + tid / LANES;
  let K4 = p.K / 4u;
  var acc0 = vec4<f32>(0.0);
  var acc1 = vec4<f32>(0.0);
  var acc2 = vec4<f32>(0.0);
  var acc3 = vec4<f32>(0.0);
  var sq0 = vec4<f32>(0.0);
  var sq1 = vec4<f32>(0.0);
  var sq2 = vec4<f32>(0.0);
  var sq3 = vec4<f32>(0.0);
  if (n < N) {
    // WU weight loads in flight per thread (one per step, latency, not bandwidth, was the limit): at K 1024 a
    // lane's whole share of a column in one step
    var k4 = lane;
    for (; k4 + (WU - 1u) * LANES < K4; k4 += WU * LANES) {
      var ws: array<vec4<f32>, WU>;
      for (var u = 0u; u < WU; u++) { ws[u] = wload(part, n * K4 + k4 + u * LANES); }
      for (var u = 0u; u < WU; u++) {
        let ku = k4 + u * LANES;
        acc0 += dots(ws[u], 0u, ku, K4);
        if (ROW_GROUPS > 1u) { acc1 += dots(ws[u], 4u, ku, K4); }
        if (ROW_GROUPS > 2u) { acc2 += dots(ws[u], 8u, ku, K4); }
        if (ROW_GROUPS > 3u) { acc3 += dots(ws[u], 12u, ku, K4); }
#if NORM
        sq0 += squares(0u, ku, K4);
        if (ROW_GROUPS > 1u) { sq1 += squares(4u, ku, K4); }
        if (ROW_GROUPS > 2u) { sq2 += squares(8u, ku, K4); }
        if (ROW_GROUPS > 3u) { sq3 += squares(12u, ku, K4); }
#endif
      }
    }
    for (; k4 < K4; k4 += LANES) {
      let wv = wload(part, n * K4 + k4);
      acc0 += dots(wv, 0u, k4, K4);
      if (ROW_GROUPS > 1u) { acc1 += dots(wv, 4u, k4, K4); }
      if (ROW_GROUPS > 2u) { acc2 += dots(wv, 8u, k4, K4); }
      if (ROW_GROUPS > 3u) { acc3 += dots(wv, 12u, k4, K4); }
#if NORM
      sq0 += squares(0u, k4, K4);
      if (ROW_GROUPS > 1u) { sq1 += squares(4u, k4, K4); }
      if (ROW_GROUPS > 2u) { sq2 += squares(8u, k4, K4); }
      if (ROW_GROUPS > 3u) { sq3 += squares(12u, k4, K4); }
#endif
    }
  }
  let sums = laneSums(Sums(acc0, acc1, acc2, acc3), tid, lane);
  var s0 = sums.s0;
  var s1 = sums.s1;
  var s2 = sums.s2;
  var s3 = sums.s3;
#if NORM
  let squares = laneSums(Sums(sq0, sq1, sq2, sq3), tid, lane);
  let invK = 1.0 / f32(p.K);
  s0 *= inverseSqrt(squares.s0 * invK + p.eps);
  if (ROW_GROUPS > 1u) { s1 *= inverseSqrt(squares.s1 * invK + p.eps); }
  if (ROW_GROUPS > 2u) { s2 *= inverseSqrt(squares.s2 * invK + p.eps); }
  if (ROW_GROUPS > 3u) { s3 *= inverseSqrt(squares.s3 * invK + p.eps); }
#endif
  if (lane == 0u && n < N) {
    storeRows(part, 0u, n, N, s0);
    if (ROW_GROUPS > 1u) { storeRows(part, 4u, n, N, s1); }
    if (ROW_GROUPS > 2u) { storeRows(part, 8u, n, N, s2); }
    if (ROW_GROUPS > 3u) { storeRows(part, 12u, n, N, s3); }
  }
}
