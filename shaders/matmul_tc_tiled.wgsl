// out[M, N] = alpha·op(a)·op(b) (+ out) on tensor cores, version 3 of the tensor-core matmul
// (src/kernels/matmul-tc.ts): any M, N, K, either operand transposed, f32 or f16 storage.
// - Each KT-deep slice of the workgroup's rows of op(a) and columns of op(b) is converted to f16 in
//   workgroup memory (coalesced loads along the stored-contiguous dimension, zero outside the matrix);
//   the next slice's loads are issued into registers before the current slice's products (prefetch).
// - f32 operands arrive with a power-of-two scale per row of op(a) / column of op(b) (shaders/
//   absmax_scale.wgsl) that brings their largest entry near 2^15, so f16 neither overflows nor flushes
//   small values (gradients) to zero; the epilogue divides the scales back out, exactly.
// - Each subgroup owns TM x TN fragments of SM x SN; the epilogue passes each through workgroup memory
//   so that bounds checks, alpha and accumulation happen per element.
// Variant consts: SM, SN, SK (the subgroup matrix config), WGM x WGN subgroups, TM, TN, SG (subgroup
// size), KT (slice depth, a multiple of SK), TRANS_A, TRANS_B; aliases TA, TB (f32 or f16).
struct Params { M: u32, N: u32, K: u32, accumulate: u32, alpha: f32, _p0: u32, _p1: u32, _p2: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<TA>;
@group(0) @binding(2) var<storage, read> b: array<TB>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
// Scales of op(a)'s rows and op(b)'s columns; an operand that needs none (f16) binds a single 1.0.
@group(0) @binding(4) var<storage, read> scaleA: array<f32>;
@group(0) @binding(5) var<storage, read> scaleB: array<f32>;

alias Left = subgroup_matrix_left<f16, SK, SM>;
alias Right = subgroup_matrix_right<f16, SN, SK>;
alias Acc = subgroup_matrix_result<f32, SN, SM>;

const THREADS = WGM * WGN * SG;
const BM = WGM * TM * SM;  // rows of out per workgroup
const BN = WGN * TN * SN;  // columns of out per workgroup
// Padding that staggers rows of the staged tiles across memory banks.
const PAD = 8u;
// op(a)'s tile is stored row-major [BM][KT] when a is [M, K], K-major [KT][BM] when a is [K, M]:
// either way the loads write consecutive addresses. Same for op(b) (column-major [BN][KT] for b [N, K]).
const LDA = select(KT + PAD, BM + PAD, TRANS_A);
const LDB = select(BN + PAD, KT + PAD, TRANS_B);
const A_TILE = select(BM, KT, TRANS_A) * LDA;
const B_TILE = select(KT, BN, TRANS_B) * LDB;
const EA = BM * KT / THREADS;  // elements of the op(a) slice each thread loads
const EB = BN * KT / THREADS;
const FRAG = SM * SN;

var<workgroup> tileA: array<f16, A_TILE>;
var<workgroup> tileB: array<f16, B_TILE>;
var<workgroup> tileC: array<f32, WGM * WGN * FRAG>;

// Row (of op(a)) and depth of the e-th element of a slice, so that consecutive e are consecutive in memory.
fn aCoord(e: u32) -> vec2u {
  if (TRANS_A) { return vec2u(e % BM, e / BM); }
  return vec2u(e / KT, e % KT);
}
fn bCoord(e: u32) -> vec2u {  // (column of op(b), depth)
  if (TRANS_B) { return vec2u(e / KT, e % KT); }
  return vec2u(e % BN, e / BN);
}
fn aAt(r: u32, k: u32) -> u32 { return select(r * LDA + k, k * LDA + r, TRANS_A); }
fn bAt(c: u32, k: u32) -> u32 { return select(k * LDB + c, c * LDB + k, TRANS_B); }

// Rows past M (a partial tile) take row M-1's scale: their loads are zeros, and 0 x finite stays 0.
fn scaleOfA(row: u32) -> f32 { return scaleA[min(min(row, p.M - 1u), arrayLength(&scaleA) - 1u)]; }
fn scaleOfB(col: u32) -> f32 { return scaleB[min(min(col, p.N - 1u), arrayLength(&scaleB) - 1u)]; }

fn loadA(row: u32, k: u32) -> f32 {
  if (row >= p.M || k >= p.K) { return 0.0; }
  return f32(a[select(row * p.K + k, k * p.M + row, TRANS_A)]);
}
fn loadB(col: u32, k: u32) -> f32 {
  if (col >= p.N || k >= p.K) { return 0.0; }
  return f32(b[select(k * p.N + col, col * p.K + k, TRANS_B)]);
}

@compute @workgroup_size(THREADS)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(subgroup_id) sid: u32, @builtin(subgroup_invocation_id) lane: u32,
        @builtin(local_invocation_index) lid: u32) {
  let row0 = wid.y * BM;
  let col0 = wid.x * BN;
  let r0 = (sid / WGN) * TM * SM;  // this subgroup's fragments within the workgroup tile
  let c0 = (sid % WGN) * TN * SN;

  // Per-thread scales of the rows / columns it loads: the same for every slice.
  var sa: array<f32, EA>;
  var sb: array<f32, EB>;
  for (var i = 0u; i < EA; i++) {
    let row = row0 + aCoord(lid + i * THREADS).x;
    sa[i] = scaleOfA(row);
  }
  for (var i = 0u; i < EB; i++) {
    let col = col0 + bCoord(lid + i * THREADS).x;
    sb[i] = scaleOfB(col);
  }

  var acc: array<array<Acc, TN>, TM>;
  for (var i = 0u; i < TM; i++) {
    for (var j = 0u; j < TN; j++) { acc[i][j] = Acc(); }
  }
  var ra: array<f32, EA>;
  var rb: array<f32, EB>;
  for (var i = 0u; i < EA; i++) { let c = aCoord(lid + i * THREADS); ra[i] = loadA(row0 + c.x, c.y); }
  for (var i = 0u; i < EB; i++) { let c = bCoord(lid + i * THREADS); rb[i] = loadB(col0 + c.x, c.y); }

  for (var k0 = 0u; k0 < p.K; k0 += KT) {
    workgroupBarrier();  // the previous slice's fragments are loaded
    for (var i = 0u; i < EA; i++) { let c = aCoord(lid + i * THREADS); tileA[aAt(c.x, c.y)] = f16(ra[i] * sa[i]); }
    for (var i = 0u; i < EB; i++) { let c = bCoord(lid + i * THREADS); tileB[bAt(c.x, c.y)] = f16(rb[i] * sb[i]); }
    workgroupBarrier();
    let k1 = k0 + KT;
    if (k1 < p.K) {
      for (var i = 0u; i < EA; i++) { let c = aCoord(lid + i * THREADS); ra[i] = loadA(row0 + c.x, k1 + c.y); }
      for (var i = 0u; i < EB; i++) { let c = bCoord(lid + i * THREADS); rb[i] = loadB(col0 + c.x, k1 + c.y); }
    }
    for (var kk = 0u; kk < KT; kk += SK) {
      var fa: array<Left, TM>;
      for (var i = 0u; i < TM; i++) { fa[i] = subgroupMatrixLoad<Left>(&tileA, aAt(r0 + i * SM, kk), TRANS_A, LDA); }
      for (var j = 0u; j < TN; j++) {
        let fb = subgroupMatrixLoad<Right>(&tileB, bAt(c0 + j * SN, kk), TRANS_B, LDB);
        for (var i = 0u; i < TM; i++) { acc[i][j] = subgroupMatrixMultiplyAccumulate(fa[i], fb, acc[i][j]); }
      }
    }
  }

  let mine = sid * FRAG;
  for (var i = 0u; i < TM; i++) {
    for (var j = 0u; j < TN; j++) {
      workgroupBarrier();
      subgroupMatrixStore(&tileC, mine, acc[i][j], false, SN);
      workgroupBarrier();
      for (var e = lane; e < FRAG; e += SG) {
        let row = row0 + r0 + i * SM + e / SN;
        let col = col0 + c0 + j * SN + e % SN;
        if (row < p.M && col < p.N) {
          var v = tileC[mine + e];
          v = v / scaleOfA(row) / scaleOfB(col) * p.alpha;
          let o = row * p.N + col;
          if (p.accumulate != 0u) { v = v + out[o]; }
          out[o] = v;
        }
      }
    }
  }
}
