// out[M, N] = alpha·op(a)·op(b) (+ out) on tensor cores, version 3 of the tensor-core matmul
// (src/kernels/matmul-tc.ts): any M, N, K, either operand transposed, f32 or f16 storage.
// - Each KT-deep slice of the workgroup's rows of op(a) and columns of op(b) is converted to f16 in
//   workgroup memory (coalesced loads along the stored-contiguous dimension, vec4 where that dimension is
//   a multiple of 4, zero outside the matrix); with vec4 loads the next slice is fetched into registers
//   while the current one is multiplied.
// - STAGES 1: one staged slice, two barriers a slice (stage, multiply). STAGES 2: two, one barrier a slice: the
//   next slice is staged into the other half right after this one's products, so a workgroup no longer waits
//   for its fill between two barriers before it multiplies (the fill and the products took about the same time
//   and ran one after the other: bench/RESULTS.md, 2026-12-02).
// - f32 operands arrive with a power-of-two scale per row of op(a) / column of op(b) (shaders/
//   absmax_scale.wgsl) that brings their largest entry near 2^15, so f16 neither overflows nor flushes
//   small values (gradients) to zero; the fill multiplies them in (FILL_SCALE_A / _B) and the epilogue divides
//   them back out, exactly. An f16 a may come already scaled (x·Wᵀ's x cast once, absmax_scale.wgsl rows_f16):
//   then only the epilogue divides. The prefetched slice stays in the storage type (vec4<f16>: half the registers).
// - Each subgroup owns 4 x 4 fragments of SM x SN, held in sixteen named accumulators: an array of 8 or
//   more subgroup matrices indexed in loops is kept in local memory on the H200 (30 TFLOP/s against 630
//   for named ones, bench/tc-probe.mjs), so the fragment loops are written out.
// - The epilogue passes each fragment through workgroup memory so that bounds checks, the scales, alpha
//   and accumulation happen per element.
// - Workgroup memory is what limits speed here: on an H100 the default tile ran 1.8x slower with 16 KiB more of it
//   declared (unused; 8 KiB more cost nothing), and 1.6x slower with a whole row of fragments through the epilogue
//   at a time (bench/RESULTS.md, 2026-12-06), so the staged rows along K of 16-deep slices go unpadded (their
//   2-way bank conflicts cost less: 0.89x the time) and the epilogue takes one fragment at a time.
// Variant consts: SM, SN, SK (the subgroup matrix config), WGM x WGN subgroups, SG (subgroup size), KT
// (slice depth, a multiple of SK), STAGES (slices staged: 1 or 2), TRANS_A, TRANS_B, VA, VB (elements per load of a / b: 4 when
// the stored-contiguous dimension is a multiple of 4, else 1), FILL_SCALE_A, FILL_SCALE_B (the fill multiplies
// the operand by its scales: f32 operands); aliases TA, TB (f32 or f16) and AV, BV (vec4<TA> / TA: what one
// load reads).
struct Params { M: u32, N: u32, K: u32, accumulate: u32, alpha: f32, _p0: u32, _p1: u32, _p2: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<AV>;
@group(0) @binding(2) var<storage, read> b: array<BV>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
// Scales of op(a)'s rows and op(b)'s columns; an operand that needs none (f16) binds a single 1.0.
@group(0) @binding(4) var<storage, read> scaleA: array<f32>;
@group(0) @binding(5) var<storage, read> scaleB: array<f32>;

alias Left = subgroup_matrix_left<f16, SK, SM>;
alias Right = subgroup_matrix_right<f16, SN, SK>;
alias Acc = subgroup_matrix_result<f32, SN, SM>;

const TM = 4u;  // fragments per subgroup along M and N (the named accumulators c00..c33 below)
const TN = 4u;

const THREADS = WGM * WGN * SG;
const BM = WGM * TM * SM;  // rows of out per workgroup
const BN = WGN * TN * SN;  // columns of out per workgroup
// Padding that staggers rows of the staged tiles across memory banks.
const PAD = 8u;
const PAD_K = select(PAD, 0u, KT == 16u);  // rows that run along K (a [M, K], b [N, K])
// op(a)'s tile is stored row-major [BM][KT] when a is [M, K], K-major [KT][BM] when a is [K, M]:
// either way the loads write consecutive addresses. Same for op(b) (column-major [BN][KT] for b [N, K]).
const LDA = select(KT + PAD_K, BM + PAD, TRANS_A);
const LDB = select(BN + PAD, KT + PAD_K, TRANS_B);
const A_TILE = select(BM, KT, TRANS_A) * LDA;
const B_TILE = select(KT, BN, TRANS_B) * LDB;
const UA = BM * KT / (VA * THREADS);  // loads of the op(a) slice each thread makes
const UB = BN * KT / (VB * THREADS);
const FRAG = SM * SN;

const_assert STAGES == 1u || STAGES == 2u;
var<workgroup> tileA: array<f16, STAGES * A_TILE>;
var<workgroup> tileB: array<f16, STAGES * B_TILE>;
var<workgroup> tileC: array<f32, WGM * WGN * FRAG>;

// Row (of op(a)) and depth of the first element of the u-th load of a slice; consecutive u read
// consecutive memory (along K for a [M, K], along M for a [K, M]).
fn aCoord(u: u32) -> vec2u {
  if (TRANS_A) { return vec2u((u % (BM / VA)) * VA, u / (BM / VA)); }
  return vec2u(u / (KT / VA), (u % (KT / VA)) * VA);
}
fn bCoord(u: u32) -> vec2u {  // (column of op(b), depth)
  if (TRANS_B) { return vec2u(u / (KT / VB), (u % (KT / VB)) * VB); }
  return vec2u((u % (BN / VB)) * VB, u / (BN / VB));
}
fn aAt(r: u32, k: u32) -> u32 { return select(r * LDA + k, k * LDA + r, TRANS_A); }
fn bAt(c: u32, k: u32) -> u32 { return select(k * LDB + c, c * LDB + k, TRANS_B); }

// Rows past M (a partial tile) take row M-1's scale: their loads are zeros, and 0 x finite stays 0.
fn scaleOfA(row: u32) -> f32 { return scaleA[min(min(row, p.M - 1u), arrayLength(&scaleA) - 1u)]; }
fn scaleOfB(col: u32) -> f32 { return scaleB[min(min(col, p.N - 1u), arrayLength(&scaleB) - 1u)]; }

// VA (or VB) consecutive elements from (row, k) on; zeros outside the matrix (a load is all in or all out:
// the contiguous dimension is a multiple of VA).
fn loadA(row: u32, k: u32) -> vec4<TA> {
  if (row >= p.M || k >= p.K) { return vec4<TA>(); }
  return vec4<TA>(a[select(row * p.K + k, k * p.M + row, TRANS_A) / VA]);  // a vec4, or a scalar splat
}
fn loadB(col: u32, k: u32) -> vec4<TB> {
  if (col >= p.N || k >= p.K) { return vec4<TB>(); }
  return vec4<TB>(b[select(k * p.N + col, col * p.K + k, TRANS_B) / VB]);
}

// Scales of the VA rows a load covers (one row repeated when it runs along K).
fn scalesA(row: u32) -> vec4f {
  if (TRANS_A) { return vec4f(scaleOfA(row), scaleOfA(row + 1u), scaleOfA(row + 2u), scaleOfA(row + 3u)); }
  return vec4f(scaleOfA(row));
}
fn scalesB(col: u32) -> vec4f {
  if (TRANS_B) { return vec4f(scaleOfB(col)); }
  return vec4f(scaleOfB(col), scaleOfB(col + 1u), scaleOfB(col + 2u), scaleOfB(col + 3u));
}

// The u-th load of this thread's share of the slice at depth k0, scaled where the fill scales (VA or VB elements
// in a vec4).
fn loadUnitA(u: u32, row0: u32, k0: u32, lid: u32) -> vec4<TA> {
  let c = aCoord(lid + u * THREADS);
  let v = loadA(row0 + c.x, k0 + c.y);
  if (FILL_SCALE_A) { return v * vec4<TA>(scalesA(row0 + c.x)); }
  return v;
}
fn loadUnitB(u: u32, col0: u32, k0: u32, lid: u32) -> vec4<TB> {
  let c = bCoord(lid + u * THREADS);
  let v = loadB(col0 + c.x, k0 + c.y);
  if (FILL_SCALE_B) { return v * vec4<TB>(scalesB(col0 + c.x)); }
  return v;
}
// ... converted to f16 in staged slice s (the VA elements of a load are consecutive there too).
fn stageUnitA(u: u32, v: vec4<TA>, lid: u32, s: u32) {
  let c = aCoord(lid + u * THREADS);
  let at = s * A_TILE + aAt(c.x, c.y);
  tileA[at] = f16(v.x);
  if (VA == 4) { tileA[at + 1u] = f16(v.y); tileA[at + 2u] = f16(v.z); tileA[at + 3u] = f16(v.w); }
}
fn stageUnitB(u: u32, v: vec4<TB>, lid: u32, s: u32) {
  let c = bCoord(lid + u * THREADS);
  let at = s * B_TILE + bAt(c.x, c.y);
  tileB[at] = f16(v.x);
  if (VB == 4) { tileB[at + 1u] = f16(v.y); tileB[at + 2u] = f16(v.z); tileB[at + 3u] = f16(v.w); }
}

// With vec4 loads (NAMED: UA, UB in 1, 2, 4, 8) the next slice is loaded into these named registers while
// the current one is multiplied; a loop over an array of them is slower (arrays of prefetched values, and
// loops whose every load waits before its store, measured on the H200: bench/RESULTS.md).
const NAMED = VA == 4u && VB == 4u;
const_assert !NAMED || ((UA == 1u || UA == 2u || UA == 4u || UA == 8u) && (UB == 1u || UB == 2u || UB == 4u || UB == 8u));
var<private> va0: vec4<TA>;
var<private> va1: vec4<TA>;
var<private> va2: vec4<TA>;
var<private> va3: vec4<TA>;
var<private> va4: vec4<TA>;
var<private> va5: vec4<TA>;
var<private> va6: vec4<TA>;
var<private> va7: vec4<TA>;
var<private> vb0: vec4<TB>;
var<private> vb1: vec4<TB>;
var<private> vb2: vec4<TB>;
var<private> vb3: vec4<TB>;
var<private> vb4: vec4<TB>;
var<private> vb5: vec4<TB>;
var<private> vb6: vec4<TB>;
var<private> vb7: vec4<TB>;
fn fetch(row0: u32, col0: u32, k0: u32, lid: u32) {
  va0 = loadUnitA(0u, row0, k0, lid);
  if (UA > 1u) { va1 = loadUnitA(1u, row0, k0, lid); }
  if (UA > 2u) { va2 = loadUnitA(2u, row0, k0, lid); va3 = loadUnitA(3u, row0, k0, lid); }
  if (UA > 4u) { va4 = loadUnitA(4u, row0, k0, lid); va5 = loadUnitA(5u, row0, k0, lid); va6 = loadUnitA(6u, row0, k0, lid); va7 = loadUnitA(7u, row0, k0, lid); }
  vb0 = loadUnitB(0u, col0, k0, lid);
  if (UB > 1u) { vb1 = loadUnitB(1u, col0, k0, lid); }
  if (UB > 2u) { vb2 = loadUnitB(2u, col0, k0, lid); vb3 = loadUnitB(3u, col0, k0, lid); }
  if (UB > 4u) { vb4 = loadUnitB(4u, col0, k0, lid); vb5 = loadUnitB(5u, col0, k0, lid); vb6 = loadUnitB(6u, col0, k0, lid); vb7 = loadUnitB(7u, col0, k0, lid); }
}
fn stage(lid: u32, s: u32) {
  stageUnitA(0u, va0, lid, s);
  if (UA > 1u) { stageUnitA(1u, va1, lid, s); }
  if (UA > 2u) { stageUnitA(2u, va2, lid, s); stageUnitA(3u, va3, lid, s); }
  if (UA > 4u) { stageUnitA(4u, va4, lid, s); stageUnitA(5u, va5, lid, s); stageUnitA(6u, va6, lid, s); stageUnitA(7u, va7, lid, s); }
  stageUnitB(0u, vb0, lid, s);
  if (UB > 1u) { stageUnitB(1u, vb1, lid, s); }
  if (UB > 2u) { stageUnitB(2u, vb2, lid, s); stageUnitB(3u, vb3, lid, s); }
  if (UB > 4u) { stageUnitB(4u, vb4, lid, s); stageUnitB(5u, vb5, lid, s); stageUnitB(6u, vb6, lid, s); stageUnitB(7u, vb7, lid, s); }
}

// Scalar loads (a contiguous dimension that is not a multiple of 4): load and stage in one loop.
fn fillScalar(row0: u32, col0: u32, k0: u32, lid: u32, s: u32) {
  for (var i = 0u; i < UA; i++) { stageUnitA(i, loadUnitA(i, row0, k0, lid), lid, s); }
  for (var i = 0u; i < UB; i++) { stageUnitB(i, loadUnitB(i, col0, k0, lid), lid, s); }
}

// Staged slice s gets the slice at depth k0: from the prefetched registers (vec4 loads), else loaded now.
fn fill(row0: u32, col0: u32, k0: u32, lid: u32, s: u32) {
  if (NAMED) { stage(lid, s); } else { fillScalar(row0, col0, k0, lid, s); }
}

// The fragment of a staged tile at `at`: a fragment load takes its majorness as a template argument, so the
// layout picks the function.
#if TRANS_A
fn fragmentA(at: u32) -> Left { return subgroupMatrixLoad<Left, col_major>(&tileA, at, LDA); }
#else
fn fragmentA(at: u32) -> Left { return subgroupMatrixLoad<Left, row_major>(&tileA, at, LDA); }
#endif
#if TRANS_B
fn fragmentB(at: u32) -> Right { return subgroupMatrixLoad<Right, col_major>(&tileB, at, LDB); }
#else
fn fragmentB(at: u32) -> Right { return subgroupMatrixLoad<Right, row_major>(&tileB, at, LDB); }
#endif

// Writes the fragment a subgroup just stored at tileC[mine..] to out at (row, col), element by element.
fn emit(row: u32, col: u32, mine: u32, lane: u32) {
  workgroupBarrier();
  for (var e = lane; e < FRAG; e += SG) {
    let r = row + e / SN;
    let c = col + e % SN;
    if (r < p.M && c < p.N) {
      let o = r * p.N + c;
      var v = tileC[mine + e] / scaleOfA(r) / scaleOfB(c) * p.alpha;
      if (p.accumulate != 0u) { v = v + out[o]; }
      out[o] = v;
    }
  }
  workgroupBarrier();  // before the next fragment overwrites tileC
}

@compute @workgroup_size(THREADS)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(subgroup_id) sid: u32, @builtin(subgroup_invocation_id) lane: u32,
        @builtin(local_invocation_index) lid: u32) {
  let row0 = wid.y * BM;
  let col0 = wid.x * BN;
  let r0 = (sid / WGN) * TM * SM;  // this subgroup's fragments within the workgroup tile
  let c0 = (sid % WGN) * TN * SN;

  var c00 = Acc();
  var c01 = Acc();
  var c02 = Acc();
  var c03 = Acc();
  var c10 = Acc();
  var c11 = Acc();
  var c12 = Acc();
  var c13 = Acc();
  var c20 = Acc();
  var c21 = Acc();
  var c22 = Acc();
  var c23 = Acc();
  var c30 = Acc();
  var c31 = Acc();
  var c32 = Acc();
  var c33 = Acc();

  if (NAMED) { fetch(row0, col0, 0u, lid); }
  if (STAGES == 2u) {  // slice 0 staged up front, then each slice stages the next one after its products
    fill(row0, col0, 0u, lid, 0u);
    workgroupBarrier();
    if (NAMED && KT < p.K) { fetch(row0, col0, KT, lid); }
  }
  for (var k0 = 0u; k0 < p.K; k0 += KT) {
    if (STAGES == 1u) {
      workgroupBarrier();  // the previous slice's fragments are loaded
      fill(row0, col0, k0, lid, 0u);
      workgroupBarrier();
      if (NAMED && k0 + KT < p.K) { fetch(row0, col0, k0 + KT, lid); }
    }
    let s = select(0u, (k0 / KT) % 2u, STAGES == 2u);
    let ba = s * A_TILE;
    let bb = s * B_TILE;
    for (var kk = 0u; kk < KT; kk += SK) {
      let a0 = fragmentA(ba + aAt(r0, kk));
      let a1 = fragmentA(ba + aAt(r0 + 1u * SM, kk));
      let a2 = fragmentA(ba + aAt(r0 + 2u * SM, kk));
      let a3 = fragmentA(ba + aAt(r0 + 3u * SM, kk));
      var b = fragmentB(bb + bAt(c0, kk));
      c00 = subgroupMatrixMultiplyAccumulate(a0, b, c00);
      c10 = subgroupMatrixMultiplyAccumulate(a1, b, c10);
      c20 = subgroupMatrixMultiplyAccumulate(a2, b, c20);
      c30 = subgroupMatrixMultiplyAccumulate(a3, b, c30);
      b = fragmentB(bb + bAt(c0 + 1u * SN, kk));
      c01 = subgroupMatrixMultiplyAccumulate(a0, b, c01);
      c11 = subgroupMatrixMultiplyAccumulate(a1, b, c11);
      c21 = subgroupMatrixMultiplyAccumulate(a2, b, c21);
      c31 = subgroupMatrixMultiplyAccumulate(a3, b, c31);
      b = fragmentB(bb + bAt(c0 + 2u * SN, kk));
      c02 = subgroupMatrixMultiplyAccumulate(a0, b, c02);
      c12 = subgroupMatrixMultiplyAccumulate(a1, b, c12);
      c22 = subgroupMatrixMultiplyAccumulate(a2, b, c22);
      c32 = subgroupMatrixMultiplyAccumulate(a3, b, c32);
      b = fragmentB(bb + bAt(c0 + 3u * SN, kk));
      c03 = subgroupMatrixMultiplyAccumulate(a0, b, c03);
      c13 = subgroupMatrixMultiplyAccumulate(a1, b, c13);
      c23 = subgroupMatrixMultiplyAccumulate(a2, b, c23);
      c33 = subgroupMatrixMultiplyAccumulate(a3, b, c33);
    }
    if (STAGES == 2u) {
      if (k0 + KT < p.K) { fill(row0, col0, k0 + KT, lid, 1u - s); }
      workgroupBarrier();  // the next slice is staged, this one's fragments are loaded
      if (NAMED && k0 + 2u * KT < p.K) { fetch(row0, col0, k0 + 2u * KT, lid); }
    }
  }

  let mine = sid * FRAG;
  subgroupMatrixStore<row_major>(&tileC, mine, c00, SN);
  emit(row0 + r0 + 0u * SM, col0 + c0 + 0u * SN, mine, lane);
  subgroupMatrixStore<row_major>(&tileC, mine, c01, SN);
  emit(row0 + r0 + 0u * SM, col0 + c0 + 1u * SN, mine, lane);
  subgroupMatrixStore<row_major>(&tileC, mine, c02, SN);
  emit(row0 + r0 + 0u * SM, col0 + c0 + 2u * SN, mine, lane);
  subgroupMatrixStore<row_major>(&tileC, mine, c03, SN);
  emit(row0 + r0 + 0u * SM, col0 + c0 + 3u * SN, mine, lane);
  subgroupMatrixStore<row_major>(&tileC, mine, c10, SN);
  emit(row0 + r0 + 1u * SM, col0 + c0 + 0u * SN, mine, lane);
  subgroupMatrixStore<row_major>(&tileC, mine, c11, SN);
  emit(row0 + r0 + 1u * SM, col0 + c0 + 1u * SN, mine, lane);
  subgroupMatrixStore<row_major>(&tileC, mine, c12, SN);
  emit(row0 + r0 + 1u * SM, col0 + c0 + 2u * SN, mine, lane);
  subgroupMatrixStore<row_major>(&tileC, mine, c13, SN);
  emit(row0 + r0 + 1u * SM, col0 + c0 + 3u * SN, mine, lane);
  subgroupMatrixStore<row_major>(&tileC, mine, c20, SN);
  emit(row0 + r0 + 2u * SM, col0 + c0 + 0u * SN, mine, lane);
  subgroupMatrixStore<row_major>(&tileC, mine, c21, SN);
  emit(row0 + r0 + 2u * SM, col0 + c0 + 1u * SN, mine, lane);
  subgroupMatrixStore<row_major>(&tileC, mine, c22, SN);
  emit(row0 + r0 + 2u * SM, col0 + c0 + 2u * SN, mine, lane);
  subgroupMatrixStore<row_major>(&tileC, mine, c23, SN);
  emit(row0 + r0 + 2u * SM, col0 + c0 + 3u * SN, mine, lane);
  subgroupMatrixStore<row_major>(&tileC, mine, c30, SN);
  emit(row0 + r0 + 3u * SM, col0 + c0 + 0u * SN, mine, lane);
  subgroupMatrixStore<row_major>(&tileC, mine, c31, SN);
  emit(row0 + r0 + 3u * SM, col0 + c0 + 1u * SN, mine, lane);
  subgroupMatrixStore<row_major>(&tileC, mine, c32, SN);
  emit(row0 + r0 + 3u * SM, col0 + c0 + 2u * SN, mine, lane);
  subgroupMatrixStore<row_major>(&tileC, mine, c33, SN);
  emit(row0 + r0 + 3u * SM, col0 + c0 + 3u * SN, mine, lane);
}
