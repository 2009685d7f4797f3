// out[M, N] = alpha·x·Wᵀ (+ out) on tensor cores for batches of rows too few for matmul_tc_tiled's 128-row tiles
// (decode and rollout batches: matmul's auto policy sends it 128 to 2047 rows; src/kernels/matmul-tc.ts, variant
// 'tc_direct'):
// - x arrives as f16 [MP, K]: the f32 activations times a power-of-two scale per row, MP = M padded with zero
//   rows to whole 64-row tiles (shaders/absmax_scale.wgsl rows_f16); W is f16 [N, K] (nn.Linear weights) with N
//   a multiple of a subgroup's 4·SN columns and K of SK. So every fragment is loaded straight from storage, in
//   bounds, with no staging in workgroup memory and no barrier in the K loop.
// - Few rows make few output tiles (256 rows x 3072 columns: 192 of 64x64), too few subgroups to hide the loads'
//   latency. So the KS subgroups of a workgroup share one 64x64 tile, each over its p.kPart of K, and the epilogue
//   sums their partial products through workgroup memory, one fragment at a time.
// - The next step's 8 fragments are loaded before the current step's 16 products. The K loop counts steps
//   (p.kPart / SK, the same for every subgroup), so its control flow is uniform across the workgroup.
// - The epilogue reads the row scales it needs (4·NE a thread) all at once after the K loop, not one global load
//   waited for in each of the 16 fragments' writes.
// - Each subgroup holds its 4 x 4 fragments in sixteen named accumulators (an array of them would live in local
//   memory on the H200: bench/RESULTS.md, tensor-core matmul version 3).
// Variant consts: SM, SN, SK (the subgroup matrix config), SG (subgroup size), KS (subgroups a workgroup).
struct Params { M: u32, N: u32, K: u32, accumulate: u32, alpha: f32, kPart: u32, _p0: u32, _p1: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f16>;
@group(0) @binding(2) var<storage, read> w: array<f16>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<storage, read> scaleX: array<f32>;

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

// Sums the fragment each subgroup just stored in tileC and writes it to out at (row, col): the thread's NE
// elements lid + j·THREADS, whose rows' alpha / scale are inv[j] (rows past M are padding: never written).
fn emit(row: u32, col: u32, lid: u32, inv: array<f32, NE>) {
  workgroupBarrier();
  for (var j = 0u; j < NE; j++) {
    let e = lid + j * THREADS;
    let r = row + e / SN;
    if (r < p.M) {
      let o = r * p.N + col + e % SN;
      var v = 0.0;
      for (var s = 0u; s < KS; s++) { v += tileC[s * FRAG + e]; }
      var y = v * inv[j];
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
  let col0 = wid.x * BN;
  let kBegin = sid * p.kPart;  // the host makes kPart a multiple of SK and KS·kPart = K
  let kLast = kBegin + p.kPart - SK;
  let steps = p.kPart / SK;
  let xa = row0 * p.K;
  let wb = col0 * p.K;
  let xs = SM * p.K;  // between fragment rows of x
  let ws = SN * p.K;  // between fragment columns of W

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

  var a0 = subgroupMatrixLoad<Left, row_major>(&x, xa + kBegin, p.K);
  var a1 = subgroupMatrixLoad<Left, row_major>(&x, xa + xs + kBegin, p.K);
  var a2 = subgroupMatrixLoad<Left, row_major>(&x, xa + 2u * xs + kBegin, p.K);
  var a3 = subgroupMatrixLoad<Left, row_major>(&x, xa + 3u * xs + kBegin, p.K);
  var b0 = subgroupMatrixLoad<Right, col_major>(&w, wb + kBegin, p.K);
  var b1 = subgroupMatrixLoad<Right, col_major>(&w, wb + ws + kBegin, p.K);
  var b2 = subgroupMatrixLoad<Right, col_major>(&w, wb + 2u * ws + kBegin, p.K);
  var b3 = subgroupMatrixLoad<Right, col_major>(&w, wb + 3u * ws + kBegin, p.K);
  for (var step = 0u; step < steps; step++) {
    let kn = min(kBegin + (step + 1u) * SK, kLast);  // the last step loads its own fragments again: in bounds, unused
    let na0 = subgroupMatrixLoad<Left, row_major>(&x, xa + kn, p.K);
    let na1 = subgroupMatrixLoad<Left, row_major>(&x, xa + xs + kn, p.K);
    let na2 = subgroupMatrixLoad<Left, row_major>(&x, xa + 2u * xs + kn, p.K);
    let na3 = subgroupMatrixLoad<Left, row_major>(&x, xa + 3u * xs + kn, p.K);
    let nb0 = subgroupMatrixLoad<Right, col_major>(&w, wb + kn, p.K);
    let nb1 = subgroupMatrixLoad<Right, col_major>(&w, wb + ws + kn, p.K);
    let nb2 = subgroupMatrixLoad<Right, col_major>(&w, wb + 2u * ws + kn, p.K);
    let nb3 = subgroupMatrixLoad<Right, col_major>(&w, wb + 3u * ws + kn, p.K);
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
    a0 = na0;
    a1 = na1;
    a2 = na2;
    a3 = na3;
    b0 = nb0;
    b1 = nb1;
    b2 = nb2;
    b3 = nb3;
  }

  // Every row factor's load in flight together, once, not one wait per fragment (16 of them).
  let f0 = rowFactors(row0, lid);
  let f1 = rowFactors(row0 + SM, lid);
  let f2 = rowFactors(row0 + 2u * SM, lid);
  let f3 = rowFactors(row0 + 3u * SM, lid);
  let mine = sid * FRAG;
  subgroupMatrixStore<row_major>(&tileC, mine, c00, SN);
  emit(row0, col0, lid, f0);
  subgroupMatrixStore<row_major>(&tileC, mine, c01, SN);
  emit(row0, col0 + SN, lid, f0);
  subgroupMatrixStore<row_major>(&tileC, mine, c02, SN);
  emit(row0, col0 + 2u * SN, lid, f0);
  subgroupMatrixStore<row_major>(&tileC, mine, c03, SN);
  emit(row0, col0 + 3u * SN, lid, f0);
  subgroupMatrixStore<row_major>(&tileC, mine, c10, SN);
  emit(row0 + SM, col0, lid, f1);
  subgroupMatrixStore<row_major>(&tileC, mine, c11, SN);
  emit(row0 + SM, col0 + SN, lid, f1);
  subgroupMatrixStore<row_major>(&tileC, mine, c12, SN);
  emit(row0 + SM, col0 + 2u * SN, lid, f1);
  subgroupMatrixStore<row_major>(&tileC, mine, c13, SN);
  emit(row0 + SM, col0 + 3u * SN, lid, f1);
  subgroupMatrixStore<row_major>(&tileC, mine, c20, SN);
  emit(row0 + 2u * SM, col0, lid, f2);
  subgroupMatrixStore<row_major>(&tileC, mine, c21, SN);
  emit(row0 + 2u * SM, col0 + SN, lid, f2);
  subgroupMatrixStore<row_major>(&tileC, mine, c22, SN);
  emit(row0 + 2u * SM, col0 + 2u * SN, lid, f2);
  subgroupMatrixStore<row_major>(&tileC, mine, c23, SN);
  emit(row0 + 2u * SM, col0 + 3u * SN, lid, f2);
  subgroupMatrixStore<row_major>(&tileC, mine, c30, SN);
  emit(row0 + 3u * SM, col0, lid, f3);
  subgroupMatrixStore<row_major>(&tileC, mine, c31, SN);
  emit(row0 + 3u * SM, col0 + SN, lid, f3);
  subgroupMatrixStore<row_major>(&tileC, mine, c32, SN);
  emit(row0 + 3u * SM, col0 + 2u * SN, lid, f3);
  subgroupMatrixStore<row_major>(&tileC, mine, c33, SN);
  emit(row0 + 3u * SM, col0 + 3u * SN, lid, f3);
}
