// General matmul for any M, N, K and layout: out[M, N] = alpha·op(a)·op(b) (+ out when accumulate).
// op(a) is a [M, K] or, with TRANS_A, a stored [K, M]; op(b) is b [K, N] or, with TRANS_B, b stored [N, K].
// TA/TB are the storage types (f32 or f16); accumulation is f32. 64x64 output tile per workgroup of 16x16
// threads, 4x4 outputs per thread in 4 named vec4 accumulators; K advances in slices of 16 through
// workgroup memory, the next slice fetched into registers while the current one is used. Loads are
// scalar and bounds-checked (zero outside): the edge and small-product path.
// Split-K (few output tiles, long K): workgroup z covers depths [z·kChunk, (z+1)·kChunk) and writes its
// raw partial product to out[z, M, N]; shaders/matmul_splitk.wgsl then sums the slices.
struct Params { M: u32, N: u32, K: u32, accumulate: u32, alpha: f32, kChunk: u32, _p1: u32, _p2: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<TA>;
@group(0) @binding(2) var<storage, read> b: array<TB>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

const BM = 64u;
const BN = 64u;
const BK = 16u;  // the #unroll count of the products' loop
const_assert BK == 16u;

// k-major tiles, tileA[k][m / 4][m % 4], so a thread reads its 4 rows / 4 columns as one vec4. Rows of
// 17 vec4 (not 16) keep the k-strided stores of a [M, K] / b [N, K] tile from hitting one bank.
var<workgroup> tileA: array<array<vec4<f32>, 17>, 16>;
var<workgroup> tileB: array<array<vec4<f32>, 17>, 16>;

// Element idx (of 1024) of a tile; consecutive threads walk the operand's stored-contiguous dimension.
fn tileRowA(idx: u32) -> u32 { if (TRANS_A) { return idx % BM; } return idx / BK; }
fn tileDepthA(idx: u32) -> u32 { if (TRANS_A) { return idx / BM; } return idx % BK; }
fn tileColB(idx: u32) -> u32 { if (TRANS_B) { return idx / BK; } return idx % BN; }
fn tileDepthB(idx: u32) -> u32 { if (TRANS_B) { return idx % BK; } return idx / BN; }

fn fetchA(idx: u32, m0: u32, k0: u32) -> f32 {
  let m = m0 + tileRowA(idx);
  let k = k0 + tileDepthA(idx);
  if (m >= p.M || k >= p.K) { return 0.0; }
  if (TRANS_A) { return f32(a[k * p.M + m]); }
  return f32(a[m * p.K + k]);
}

fn fetchB(idx: u32, n0: u32, k0: u32) -> f32 {
  let n = n0 + tileColB(idx);
  let k = k0 + tileDepthB(idx);
  if (n >= p.N || k >= p.K) { return 0.0; }
  if (TRANS_B) { return f32(b[n * p.K + k]); }
  return f32(b[k * p.N + n]);
}

fn storeA(idx: u32, v: f32) {
  let m = tileRowA(idx);
  tileA[tileDepthA(idx)][m / 4u][m % 4u] = v;
}

fn storeB(idx: u32, v: f32) {
  let n = tileColB(idx);
  tileB[tileDepthB(idx)][n / 4u][n % 4u] = v;
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
  // 1024 values per tile, 4 per thread, in named registers
  var ra0 = fetchA(tid, m0, kBegin);
  var ra1 = fetchA(tid + 256u, m0, kBegin);
  var ra2 = fetchA(tid + 512u, m0, kBegin);
  var ra3 = fetchA(tid + 768u, m0, kBegin);
  var rb0 = fetchB(tid, n0, kBegin);
  var rb1 = fetchB(tid + 256u, n0, kBegin);
  var rb2 = fetchB(tid + 512u, n0, kBegin);
  var rb3 = fetchB(tid + 768u, n0, kBegin);
  for (var k0 = kBegin; k0 < kEnd; k0 += BK) {
    storeA(tid, ra0);
    storeA(tid + 256u, ra1);
    storeA(tid + 512u, ra2);
    storeA(tid + 768u, ra3);
    storeB(tid, rb0);
    storeB(tid + 256u, rb1);
    storeB(tid + 512u, rb2);
    storeB(tid + 768u, rb3);
    workgroupBarrier();
    let next = k0 + BK;
    if (next < kEnd) {
      ra0 = fetchA(tid, m0, next);
      ra1 = fetchA(tid + 256u, m0, next);
      ra2 = fetchA(tid + 512u, m0, next);
      ra3 = fetchA(tid + 768u, m0, next);
      rb0 = fetchB(tid, n0, next);
      rb1 = fetchB(tid + 256u, n0, next);
      rb2 = fetchB(tid + 512u, n0, next);
      rb3 = fetchB(tid + 768u, n0, next);
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
