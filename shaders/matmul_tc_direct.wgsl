// out[M, N] = alpha·x·Wᵀ (+ out) on tensor cores for batches of rows too few for matmul_tc_tiled's 128-row tiles
// (decode and rollout batches: matmul's auto policy sends it 128 to 2047 rows; src/kernels/matmul-tc.ts, variant
// 'tc_direct'):
// - x arrives as f16 [MP, K]: the f32 activations times a power-of-two scale per row, MP = M padded with zero
//   rows to whole 64-row tiles (shaders/absmax_scale.wgsl rows_f16); W is f16 [N, K] (nn.Linear weights) with N
//   a multiple of a subgroup's 4·SN columns and K of SK (of KS·SK when STAGED). So every load is in bounds.
// - Few rows make few output tiles (256 rows x 3072 columns: 192 of 64x64), too few subgroups to hide the loads'
//   latency. So the KS subgroups of a workgroup share one 64x64 tile, each over its own part of K, and the
//   epilogue sums their partial products through workgroup memory, one fragment at a time.
// - Two ways to feed the tensor cores, by the variant const STAGED:
//   - false (version 1): each subgroup loads its fragments straight from storage over its p.kPart of K, no
//     workgroup memory and no barrier in the K loop; the next step's 8 fragments are loaded before the current
//     step's 16 products. Loads of fragments from storage held this to 42-49 TFLOP/s even with plenty of tiles
//     (H200, bench/RESULTS.md 2026-12-03), where fragments from workgroup memory reach 170.
//   - true (version 2): each KT = KS·SK deep slice of the tile's 64 rows of x and of W is loaded by all the
//     workgroup's threads in 16-byte loads (KT/8 consecutive ones a row) and staged as f16 in workgroup memory,
//     and subgroup s multiplies the slice's s-th SK-deep part: the same K split, interleaved a slice at a time, so
//     that one coalesced load serves every subgroup. The next slice is loaded into registers before this slice's
//     products; two barriers a slice. Staged rows are padded by 8 halves (16 bytes) so that the rows a fragment
//     load reads together fall in different banks.
//   Either way the K loop counts steps, the same for every subgroup, so its control flow is uniform.
// - The epilogue reads the row scales it needs (4·NE a thread) all at once after the K loop, not one global load
//   waited for in each of the 16 fragments' writes.
// - Each subgroup holds its 4 x 4 fragments in sixteen named accumulators (an array of them would live in local
//   memory on the H200: bench/RESULTS.md, tensor-core matmul version 3).
// - MULTI (two weights) and THREE (three): the same x against two or three weights in one dispatch (q, k and v;
//   gate and up), each into its own out (plain products: alpha 1, no accumulation), their column tiles side by side
//   in the grid's x. One at a time, each of these products has 64-192 tiles at 256 rows. On an H100 (bench/RESULTS.md,
//   2026-12-07) this ran q/k/v 1.2-1.6x and gate/up 0.78-1.09x, the rollout 0.97-0.98x: opt-in. Weight loads branch on
//   the workgroup's part, so the branch is uniform.
// Variant consts: SM, SN, SK (the subgroup matrix config), SG (subgroup size), KS (subgroups a workgroup), STAGED,
// MULTI, THREE.
struct Params { M: u32, N: u32, K: u32, accumulate: u32, alpha: f32, kPart: u32, N2: u32, N3: u32 }

@group(0) @binding(0) var<uniform> p: Params;
#if STAGED
@group(0) @binding(1) var<storage, read> x: array<vec4u>;  // 8 halves a load
@group(0) @binding(2) var<storage, read> w: array<vec4u>;
#else
@group(0) @binding(1) var<storage, read> x: array<f16>;
@group(0) @binding(2) var<storage, read> w: array<f16>;
#endif
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<storage, read> scaleX: array<f32>;
#if MULTI
#if STAGED
@group(0) @binding(5) var<storage, read> wB: array<vec4u>;
#else
@group(0) @binding(5) var<storage, read> wB: array<f16>;
#endif
@group(0) @binding(6) var<storage, read_write> outB: array<f32>;
#endif
#if THREE
#if STAGED
@group(0) @binding(7) var<storage, read> wC: array<vec4u>;
#else
@group(0) @binding(7) var<storage, read> wC: array<f16>;
#endif
@group(0) @binding(8) var<storage, read_write> outC: array<f32>;
#endif

alias Left = subgroup_matrix_left<f16, SK, SM>;
alias Right = subgroup_matrix_right<f16, SN, SK>;
alias Acc = subgroup_matrix_result<f32, SN, SM>;

const BM = 4u * SM;  // rows of out per workgroup
const BN = 4u * SN;  // columns of out per workgroup
const THREADS = KS * SG;
const FRAG = SM * SN;
const NE = FRAG / THREADS;  // elements of a fragment a thread writes (the host keeps KS·SG <= FRAG)

// One fragment of each subgroup's partial product, side by side.
var<workgroup> tileC: array<f32, KS * FRAG>;

#if STAGED
const KT = KS * SK;  // depth of a staged slice
const LD = KT + 8u;  // staged row stride, in halves
const LOADS = KT / 8u;  // 16-byte loads a row of a slice
const UX = BM * LOADS / THREADS;  // loads of x's slice a thread makes (of W's: the same, BN = BM)
const_assert BM == BN && UX == 4u;  // the host plans STAGED for 16 x 16 fragments and subgroups of 32 only
var<workgroup> tileX: array<f16, BM * LD>;
var<workgroup> tileW: array<f16, BN * LD>;

// The u-th 16-byte load of this thread's share of a slice at depth k0: its index in x (or W) from the tile's first
// row `first`, and where its 8 halves go in the staged slice.
fn sliceLoad(u: u32, lid: u32, first: u32, k0: u32) -> u32 {
  let i = lid + u * THREADS;
  return (first + i / LOADS) * (p.K / 8u) + k0 / 8u + i % LOADS;
}
fn stagedAt(u: u32, lid: u32) -> u32 {
  let i = lid + u * THREADS;
  return (i / LOADS) * LD + (i % LOADS) * 8u;
}
// The 8 halves of a 16-byte load (through f32: exact for every f16, and the same WGSL under wgpu, whose naga
// rejects components of bitcast<vec2<f16>>).
fn halves(v: vec4u) -> array<f16, 8> {
  let a = unpack2x16float(v.x);
  let b = unpack2x16float(v.y);
  let c = unpack2x16float(v.z);
  let d = unpack2x16float(v.w);
  return array(f16(a.x), f16(a.y), f16(b.x), f16(b.y), f16(c.x), f16(c.y), f16(d.x), f16(d.y));
}
// The 16-byte load i of the workgroup's weight; `part` (0: w, 1: wB, 2: wC) is the workgroup's.
fn wLoad(part: u32, i: u32) -> vec4u {
#if MULTI
  if (part == 1u) { return wB[i]; }
#endif
#if THREE
  if (part == 2u) { return wC[i]; }
#endif
  return w[i];
}
fn stageX(at: u32, v: vec4u) {
  let h = halves(v);
  for (var j = 0u; j < 8u; j++) { tileX[at + j] = h[j]; }
}
fn stageW(at: u32, v: vec4u) {
  let h = halves(v);
  for (var j = 0u; j < 8u; j++) { tileW[at + j] = h[j]; }
}
#endif

#if !STAGED
// The workgroup's weight fragment at `at` (columns of W as a col_major right operand).
fn wFragment(part: u32, at: u32) -> Right {
#if MULTI
  if (part == 1u) { return subgroupMatrixLoad<Right, col_major>(&wB, at, p.K); }
#endif
#if THREE
  if (part == 2u) { return subgroupMatrixLoad<Right, col_major>(&wC, at, p.K); }
#endif
  return subgroupMatrixLoad<Right, col_major>(&w, at, p.K);
}
#endif

// Sums the fragment each subgroup just stored in tileC and writes it to out at (row, col): the thread's NE
// elements lid + j·THREADS, whose rows' alpha / scale are inv[j] (rows past M are padding: never written). `part`
// picks the out (0: out, 1: outB, 2: outC) and nOut is its columns.
fn emit(row: u32, col: u32, lid: u32, inv: array<f32, NE>, part: u32, nOut: u32) {
  workgroupBarrier();
  for (var j = 0u; j < NE; j++) {
    let e = lid + j * THREADS;
    let r = row + e / SN;
    if (r < p.M) {
      let o = r * nOut + col + e % SN;
      var v = 0.0;
      for (var s = 0u; s < KS; s++) { v += tileC[s * FRAG + e]; }
      var y = v * inv[j];
#if MULTI
      if (part == 1u) { outB[o] = y; continue; }
#endif
#if THREE
      if (part == 2u) { outC[o] = y; continue; }
#endif
      if (p.accumulate != 0u) { y = y + out[o]; }
      out[o] = y;
    }
  }
  workgroupBarrier();  // before the next fragment overwrites tileC
}

// alpha / scale of the rows this thread writes in the fragments whose first row is `row`, for emit.
fn rowFactors(row: u32, lid: u32) -> array<f32, NE> {
  var f: array<f32, NE>;
  for (var j = 0u; j < NE; j++) {
    let r = min(row + (lid + j * THREADS) / SN, p.M - 1u);  // padding rows: any in-bounds value, never written
    f[j] = p.alpha / scaleX[r];
  }
  return f;
}

@compute @workgroup_size(THREADS)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(subgroup_id) sid: u32, @builtin(local_invocation_index) lid: u32) {
  let row0 = wid.y * BM;
  // The workgroup's product and its columns (uniform: from the workgroup id and the uniforms).
  var tile = wid.x;
  var part = 0u;
  var nOut = p.N;
#if MULTI
  if (tile >= p.N / BN) {
    tile -= p.N / BN;
    part = 1u;
    nOut = p.N2;
#if THREE
    if (tile >= p.N2 / BN) {
      tile -= p.N2 / BN;
      part = 2u;
      nOut = p.N3;
    }
#endif
  }
#endif
  let col0 = tile * BN;

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

#if STAGED
  let steps = p.K / KT;
  let kk = sid * SK;  // this subgroup's part of each slice
  var x0 = x[sliceLoad(0u, lid, row0, 0u)];
  var x1 = x[sliceLoad(1u, lid, row0, 0u)];
  var x2 = x[sliceLoad(2u, lid, row0, 0u)];
  var x3 = x[sliceLoad(3u, lid, row0, 0u)];
  var w0 = wLoad(part, sliceLoad(0u, lid, col0, 0u));
  var w1 = wLoad(part, sliceLoad(1u, lid, col0, 0u));
  var w2 = wLoad(part, sliceLoad(2u, lid, col0, 0u));
  var w3 = wLoad(part, sliceLoad(3u, lid, col0, 0u));
#else
  let kBegin = sid * p.kPart;  // the host makes kPart a multiple of SK and KS·kPart = K
  let kLast = kBegin + p.kPart - SK;
  let steps = p.kPart / SK;
  let xa = row0 * p.K;
  let wb = col0 * p.K;
  let xs = SM * p.K;  // between fragment rows of x
  let ws = SN * p.K;  // between fragment columns of W
  var na0 = subgroupMatrixLoad<Left, row_major>(&x, xa + kBegin, p.K);
  var na1 = subgroupMatrixLoad<Left, row_major>(&x, xa + xs + kBegin, p.K);
  var na2 = subgroupMatrixLoad<Left, row_major>(&x, xa + 2u * xs + kBegin, p.K);
  var na3 = subgroupMatrixLoad<Left, row_major>(&x, xa + 3u * xs + kBegin, p.K);
  var nb0 = wFragment(part, wb + kBegin);
  var nb1 = wFragment(part, wb + ws + kBegin);
  var nb2 = wFragment(part, wb + 2u * ws + kBegin);
  var nb3 = wFragment(part, wb + 3u * ws + kBegin);
#endif
  for (var step = 0u; step < steps; step++) {
#if STAGED
    workgroupBarrier();  // every subgroup has loaded its fragments of the previous slice
    stageX(stagedAt(0u, lid), x0);
    stageX(stagedAt(1u, lid), x1);
    stageX(stagedAt(2u, lid), x2);
    stageX(stagedAt(3u, lid), x3);
    stageW(stagedAt(0u, lid), w0);
    stageW(stagedAt(1u, lid), w1);
    stageW(stagedAt(2u, lid), w2);
    stageW(stagedAt(3u, lid), w3);
    workgroupBarrier();
    if (step + 1u < steps) {  // the next slice, in flight during this one's products
      let kn = (step + 1u) * KT;
      x0 = x[sliceLoad(0u, lid, row0, kn)];
      x1 = x[sliceLoad(1u, lid, row0, kn)];
      x2 = x[sliceLoad(2u, lid, row0, kn)];
      x3 = x[sliceLoad(3u, lid, row0, kn)];
      w0 = wLoad(part, sliceLoad(0u, lid, col0, kn));
      w1 = wLoad(part, sliceLoad(1u, lid, col0, kn));
      w2 = wLoad(part, sliceLoad(2u, lid, col0, kn));
      w3 = wLoad(part, sliceLoad(3u, lid, col0, kn));
    }
    let a0 = subgroupMatrixLoad<Left, row_major>(&tileX, kk, LD);
    let a1 = subgroupMatrixLoad<Left, row_major>(&tileX, SM * LD + kk, LD);
    let a2 = subgroupMatrixLoad<Left, row_major>(&tileX, 2u * SM * LD + kk, LD);
    let a3 = subgroupMatrixLoad<Left, row_major>(&tileX, 3u * SM * LD + kk, LD);
    let b0 = subgroupMatrixLoad<Right, col_major>(&tileW, kk, LD);
    let b1 = subgroupMatrixLoad<Right, col_major>(&tileW, SN * LD + kk, LD);
    let b2 = subgroupMatrixLoad<Right, col_major>(&tileW, 2u * SN * LD + kk, LD);
    let b3 = subgroupMatrixLoad<Right, col_major>(&tileW, 3u * SN * LD + kk, LD);
#else
    // this step's fragments, and the next step's loads in flight during its products
    let a0 = na0;
    let a1 = na1;
    let a2 = na2;
    let a3 = na3;
    let b0 = nb0;
    let b1 = nb1;
    let b2 = nb2;
    let b3 = nb3;
    let kn = min(kBegin + (step + 1u) * SK, kLast);  // the last step loads its own fragments again: in bounds, unused
    na0 = subgroupMatrixLoad<Left, row_major>(&x, xa + kn, p.K);
    na1 = subgroupMatrixLoad<Left, row_major>(&x, xa + xs + kn, p.K);
    na2 = subgroupMatrixLoad<Left, row_major>(&x, xa + 2u * xs + kn, p.K);
    na3 = subgroupMatrixLoad<Left, row_major>(&x, xa + 3u * xs + kn, p.K);
    nb0 = wFragment(part, wb + kn);
    nb1 = wFragment(part, wb + ws + kn);
    nb2 = wFragment(part, wb + 2u * ws + kn);
    nb3 = wFragment(part, wb + 3u * ws + kn);
#endif
    c00 = subgroupMatrixMultiplyAccumulate(a0, b0, c00);
    c10 = subgroupMatrixMultiplyAccumulate(a1, b0, c10);
    c20 = subgroupMatrixMultiplyAccumulate(a2, b0, c20);
    c30 = subgroupMatrixMultiplyAccumulate(a3, b0, c30);
    c01 = subgroupMatrixMultiplyAccumulate(a0, b1, c01);
    c11 = subgroupMatrixMultiplyAccumulate(a1, b1, c11);
    c21 = subgroupMatrixMultiplyAccumulate(a2, b1, c21);
    c31 = subgroupMatrixMultiplyAccumulate(a3, b1, c31);
    c02 = subgroupMatrixMultiplyAccumulate(a0, b2, c02);
    c12 = subgroupMatrixMultiplyAccumulate(a1, b2, c12);
    c22 = subgroupMatrixMultiplyAccumulate(a2, b2, c22);
    c32 = subgroupMatrixMultiplyAccumulate(a3, b2, c32);
    c03 = subgroupMatrixMultiplyAccumulate(a0, b3, c03);
    c13 = subgroupMatrixMultiplyAccumulate(a1, b3, c13);
    c23 = subgroupMatrixMultiplyAccumulate(a2, b3, c23);
    c33 = subgroupMatrixMultiplyAccumulate(a3, b3, c33);
  }

  // Every row factor's load in flight together, once, not one wait per fragment (16 of them).
  let f0 = rowFactors(row0, lid);
  let f1 = rowFactors(row0 + SM, lid);
  let f2 = rowFactors(row0 + 2u * SM, lid);
  let f3 = rowFactors(row0 + 3u * SM, lid);
  let mine = sid * FRAG;
  subgroupMatrixStore<row_major>(&tileC, mine, c00, SN);
  emit(row0, col0, lid, f0, part, nOut);
  subgroupMatrixStore<row_major>(&tileC, mine, c01, SN);
  emit(row0, col0 + SN, lid, f0, part, nOut);
  subgroupMatrixStore<row_major>(&tileC, mine, c02, SN);
  emit(row0, col0 + 2u * SN, lid, f0, part, nOut);
  subgroupMatrixStore<row_major>(&tileC, mine, c03, SN);
  emit(row0, col0 + 3u * SN, lid, f0, part, nOut);
  subgroupMatrixStore<row_major>(&tileC, mine, c10, SN);
  emit(row0 + SM, col0, lid, f1, part, nOut);
  subgroupMatrixStore<row_major>(&tileC, mine, c11, SN);
  emit(row0 + SM, col0 + SN, lid, f1, part, nOut);
  subgroupMatrixStore<row_major>(&tileC, mine, c12, SN);
  emit(row0 + SM, col0 + 2u * SN, lid, f1, part, nOut);
  subgroupMatrixStore<row_major>(&tileC, mine, c13, SN);
  emit(row0 + SM, col0 + 3u * SN, lid, f1, part, nOut);
  subgroupMatrixStore<row_major>(&tileC, mine, c20, SN);
  emit(row0 + 2u * SM, col0, lid, f2, part, nOut);
  subgroupMatrixStore<row_major>(&tileC, mine, c21, SN);
  emit(row0 + 2u * SM, col0 + SN, lid, f2, part, nOut);
  subgroupMatrixStore<row_major>(&tileC, mine, c22, SN);
  emit(row0 + 2u * SM, col0 + 2u * SN, lid, f2, part, nOut);
  subgroupMatrixStore<row_major>(&tileC, mine, c23, SN);
  emit(row0 + 2u * SM, col0 + 3u * SN, lid, f2, part, nOut);
  subgroupMatrixStore<row_major>(&tileC, mine, c30, SN);
  emit(row0 + 3u * SM, col0, lid, f3, part, nOut);
  subgroupMatrixStore<row_major>(&tileC, mine, c31, SN);
  emit(row0 + 3u * SM, col0 + SN, lid, f3, part, nOut);
  subgroupMatrixStore<row_major>(&tileC, mine, c32, SN);
  emit(row0 + 3u * SM, col0 + 2u * SN, lid, f3, part, nOut);
  subgroupMatrixStore<row_major>(&tileC, mine, c33, SN);
  emit(row0 + 3u * SM, col0 + 3u * SN, lid, f3, part, nOut);
}
