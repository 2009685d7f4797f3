// Mid-size matmul with vec4 loads: out[M, N] = alpha·op(a)·op(b) (+ out when accumulate), f32 accumulation.
// op(a) = a [M, K] or, with TRANS_A, a stored [K, M]; op(b) = b [K, N] or, with TRANS_B, b stored [N, K].
// Each operand is read as vec4 along its stored-contiguous dimension, which must be a multiple of 4
// (the wrapper checks); M, N, K need not be multiples of the tile. The products too small to fill a GPU
// with 128x128 tiles (prefill, batched decode, LoRA): 64x64 output tile per workgroup of 16x16 threads,
// 4x4 outputs per thread in 4 named vec4 accumulators, one vec4 of each operand fetched per thread per
// 16-deep slice (into registers while the current slice is used).
// Split-K (few output tiles, long K): workgroup z covers depths [z·kChunk, (z+1)·kChunk) and writes its
// raw partial product to out[z, M, N]; shaders/matmul_splitk.wgsl then sums the slices.
struct Params { M: u32, N: u32, K: u32, accumulate: u32, alpha: f32, kChunk: u32, _p1: u32, _p2: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<vec4<TA>>;
@group(0) @binding(2) var<storage, read> b: array<vec4<TB>>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

const BM = 64u;
const BN = 64u;
const BK = 16u;  // the #unroll count of the products' loop
const_assert BK == 16u;

// k-major: tileA[k][m / 4] holds rows m..m+3 at depth k. Rows of 17 vec4 (not 16) spread the transposing
// scalar stores over more banks; two-level indices let the compiler fold bounds clamps in the k loop.
var<workgroup> tileA: array<array<vec4<f32>, 17>, 16>;
var<workgroup> tileB: array<array<vec4<f32>, 17>, 16>;

// This thread's vec4 (i of 256) of the a tile at rows m0.., depth k0..
fn fetchA(i: u32, m0: u32, k0: u32) -> vec4<f32> {
  if (TRANS_A) {
    let m = m0 + (i % 16u) * 4u;
    let k = k0 + i / 16u;
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
    tileA[i / 16u][i % 16u] = v;
    return;
  }
  let m = i / 4u;
  let k = (i % 4u) * 4u;
  tileA[k][m / 4u][m % 4u] = v.x;
  tileA[k + 1u][m / 4u][m % 4u] = v.y;
  tileA[k + 2u][m / 4u][m % 4u] = v.z;
  tileA[k + 3u][m / 4u][m % 4u] = v.w;
}

fn fetchB(i: u32, n0: u32, k0: u32) -> vec4<f32> {
  if (TRANS_B) {
    let n = n0 + i / 4u;
    let k = k0 + (i % 4u) * 4u;
    if (n >= p.N || k >= p.K) { return vec4<f32>(0.0); }
    return vec4<f32>(b[(n * p.K + k) / 4u]);
  }
  let n = n0 + (i % 16u) * 4u;
  let k = k0 + i / 16u;
  if (n >= p.N || k >= p.K) { return vec4<f32>(0.0); }
  return vec4<f32>(b[(k * p.N + n) / 4u]);
}

fn storeB(i: u32, v: vec4<f32>) {
  if (!TRANS_B) {
    tileB[i / 16u][i % 16u] = v;
    return;
  }
  let n = i / 4u;
  let k = (i % 4u) * 4u;
  tileB[k][n / 4u][n % 4u] = v.x;
  tileB[k + 1u][n / 4u][n % 4u] = v.y;
  tileB[k + 2u][n / 4u][n % 4u] = v.z;
  tileB[k + 3u][n / 4u][n % 4u] = v.w;
}

fn store4(m: u32, n0: u32, v: vec4<f32>, slice: u32) {
  if (m >= p.M) { return; }
  let row = slice + m * p.N;
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
  let kBegin = wg.z * p.kChunk;
  let kEnd = min(p.K, kBegin + p.kChunk);
  var acc0 = vec4<f32>(0.0);
  var acc1 = vec4<f32>(0.0);
  var acc2 = vec4<f32>(0.0);
  var acc3 = vec4<f32>(0.0);
  var ra = fetchA(tid, m0, kBegin);
  var rb = fetchB(tid, n0, kBegin);
  for (var k0 = kBegin; k0 < kEnd; k0 += BK) {
    storeA(tid, ra);
    storeB(tid, rb);
    workgroupBarrier();
    let next = k0 + BK;
    if (next < kEnd) {
      ra = fetchA(tid, m0, next);
      rb = fetchB(tid, n0, next);
    }
    // Written out (#unroll: wgpu bounds every loop, and the driver then left this one rolled).
#unroll k 16
    {
      let av = tileA[k][lid.y];
      let bv = tileB[k][lid.x];
      acc0 += av.x * bv;
      acc1 += av.y * bv;
      acc2 += av.z * bv;
      acc3 += av.w * bv;
    }
#endunroll
    workgroupBarrier();
  }
  let m = m0 + lid.y * 4u;
  let n = n0 + lid.x * 4u;
  let slice = wg.z * p.M * p.N;
  store4(m, n, acc0, slice);
  store4(m + 1u, n, acc1, slice);
  store4(m + 2u, n, acc2, slice);
  store4(m + 3u, n, acc3, slice);
}
