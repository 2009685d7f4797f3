// Large matmul: out[M, N] = alpha·op(a)·op(b) (+ out when accumulate), f32 accumulation.
// op(a) = a [M, K] or, with TRANS_A, a stored [K, M]; op(b) = b [K, N] or, with TRANS_B, b stored [N, K].
// Each operand is read as vec4 along its stored-contiguous dimension, which must be a multiple of 4
// (the wrapper checks); M, N and K need not be multiples of the tile. 128x128 output tile per workgroup
// of 16x16 threads; each thread owns rows {4ty..4ty+3, 64+4ty..} x columns {4tx..4tx+3, 64+4tx..}:
// 8x8 outputs in 16 named vec4 accumulators (naga spills a dynamically indexed private array to local
// memory). The split rows/columns make the vec4 reads from workgroup memory contiguous across threads.
// K advances in slices of 16; the next slice is fetched into registers while the current one is used.
struct Params { M: u32, N: u32, K: u32, accumulate: u32, alpha: f32, _p0: u32, _p1: u32, _p2: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<vec4<TA>>;
@group(0) @binding(2) var<storage, read> b: array<vec4<TB>>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

const BM = 128u;
const BN = 128u;
const BK = 16u;  // the #unroll count of the products' loop
const_assert BK == 16u;

// k-major: tileA[k][m / 4] holds rows m..m+3 at depth k. Rows of 33 vec4 (not 32) spread the
// transposing scalar stores of storeA/storeB over more banks (4-way -> 2-way conflicts). Two-level
// indices (not k * 33 + i) let the compiler fold the bounds clamps once the k loop is unrolled.
var<workgroup> tileA: array<array<vec4<f32>, 33>, 16>;
var<workgroup> tileB: array<array<vec4<f32>, 33>, 16>;

// The i-th vec4 (of 512) of the a tile at rows m0.., depth k0..
fn fetchA(i: u32, m0: u32, k0: u32) -> vec4<f32> {
  if (TRANS_A) {
    let m = m0 + (i % 32u) * 4u;
    let k = k0 + i / 32u;
    if (m >= p.M || k >= p.K) { return vec4<f32>(0.0); }
    return vec4<f32>(a[(k * p.M + m) / 4u]);
  }
  let m = m0 + i / 4u;
  let k = k0 + (i % 4u) * 4u;
  if (m >= p.M || k >= p.K) { return vec4<f32>(0.0); }
  return vec4<f32>(a[(m * p.K + k) / 4u]);
}

fn storeA(i: u32, v: vec4<f32>) {
  if (TRANS_A) {
    tileA[i / 32u][i % 32u] = v;
    return;
  }
  let m = i / 4u;
  let k = (i % 4u) * 4u;
  let col = m / 4u;
  let lane = m % 4u;
  tileA[k][col][lane] = v.x;
  tileA[k + 1u][col][lane] = v.y;
  tileA[k + 2u][col][lane] = v.z;
  tileA[k + 3u][col][lane] = v.w;
}

fn fetchB(i: u32, n0: u32, k0: u32) -> vec4<f32> {
  if (TRANS_B) {
    let n = n0 + i / 4u;
    let k = k0 + (i % 4u) * 4u;
    if (n >= p.N || k >= p.K) { return vec4<f32>(0.0); }
    return vec4<f32>(b[(n * p.K + k) / 4u]);
  }
  let n = n0 + (i % 32u) * 4u;
  let k = k0 + i / 32u;
  if (n >= p.N || k >= p.K) { return vec4<f32>(0.0); }
  return vec4<f32>(b[(k * p.N + n) / 4u]);
}

fn storeB(i: u32, v: vec4<f32>) {
  if (!TRANS_B) {
    tileB[i / 32u][i % 32u] = v;
    return;
  }
  let n = i / 4u;
  let k = (i % 4u) * 4u;
  let col = n / 4u;
  let lane = n % 4u;
  tileB[k][col][lane] = v.x;
  tileB[k + 1u][col][lane] = v.y;
  tileB[k + 2u][col][lane] = v.z;
  tileB[k + 3u][col][lane] = v.w;
}

fn store4(m: u32, n0: u32, v: vec4<f32>) {
  if (m >= p.M) { return; }
  let row = m * p.N;
  for (var j = 0u; j < 4u; j++) {
    let n = n0 + j;
    if (n < p.N) {
      var r = p.alpha * v[j];
      if (p.accumulate != 0u) { r += out[row + n]; }
      out[row + n] = r;
    }
  }
}

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let tid = lid.y * 16u + lid.x;
  let m0 = wg.y * BM;
  let n0 = wg.x * BN;
  var c00 = vec4<f32>(0.0); var c01 = vec4<f32>(0.0);
  var c10 = vec4<f32>(0.0); var c11 = vec4<f32>(0.0);
  var c20 = vec4<f32>(0.0); var c21 = vec4<f32>(0.0);
  var c30 = vec4<f32>(0.0); var c31 = vec4<f32>(0.0);
  var c40 = vec4<f32>(0.0); var c41 = vec4<f32>(0.0);
  var c50 = vec4<f32>(0.0); var c51 = vec4<f32>(0.0);
  var c60 = vec4<f32>(0.0); var c61 = vec4<f32>(0.0);
  var c70 = vec4<f32>(0.0); var c71 = vec4<f32>(0.0);
  var ra0 = fetchA(tid, m0, 0u);
  var ra1 = fetchA(tid + 256u, m0, 0u);
  var rb0 = fetchB(tid, n0, 0u);
  var rb1 = fetchB(tid + 256u, n0, 0u);
  for (var k0 = 0u; k0 < p.K; k0 += BK) {
    storeA(tid, ra0);
    storeA(tid + 256u, ra1);
    storeB(tid, rb0);
    storeB(tid + 256u, rb1);
    workgroupBarrier();
    let next = k0 + BK;
    if (next < p.K) {
      ra0 = fetchA(tid, m0, next);
      ra1 = fetchA(tid + 256u, m0, next);
      rb0 = fetchB(tid, n0, next);
      rb1 = fetchB(tid + 256u, n0, next);
    }
    // Written out (#unroll: wgpu bounds every loop, and the driver then left this one rolled).
#unroll k 16
    {
      let a0 = tileA[k][lid.y];
      let a1 = tileA[k][16u + lid.y];
      let b0 = tileB[k][lid.x];
      let b1 = tileB[k][16u + lid.x];
      c00 += a0.x * b0; c01 += a0.x * b1;
      c10 += a0.y * b0; c11 += a0.y * b1;
      c20 += a0.z * b0; c21 += a0.z * b1;
      c30 += a0.w * b0; c31 += a0.w * b1;
      c40 += a1.x * b0; c41 += a1.x * b1;
      c50 += a1.y * b0; c51 += a1.y * b1;
      c60 += a1.z * b0; c61 += a1.z * b1;
      c70 += a1.w * b0; c71 += a1.w * b1;
    }
#endunroll
    workgroupBarrier();
  }
  let m = m0 + lid.y * 4u;
  let n = n0 + lid.x * 4u;
  store4(m, n, c00); store4(m, n + 64u, c01);
  store4(m + 1u, n, c10); store4(m + 1u, n + 64u, c11);
  store4(m + 2u, n, c20); store4(m + 2u, n + 64u, c21);
  store4(m + 3u, n, c30); store4(m + 3u, n + 64u, c31);
  store4(m + 64u, n, c40); store4(m + 64u, n + 64u, c41);
  store4(m + 65u, n, c50); store4(m + 65u, n + 64u, c51);
  store4(m + 66u, n, c60); store4(m + 66u, n + 64u, c61);
  store4(m + 67u, n, c70); store4(m + 67u, n + 64u, c71);
}
