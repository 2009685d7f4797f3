// Causal attention over packed sequences on tensor cores, version 3 of attention_prefill.wgsl (needs subgroup
// matrices: src/kernels/attention.ts, attentionTcUnavailable): same bindings' meaning, parameters and outputs
// (o and the row log-sum-exp).
// - A workgroup takes ROWS flat query rows (token, head of the GQA group) of one kv head, SM rows a subgroup; the
//   rows' q, times the score scale, is staged once as f16 and each subgroup keeps its rows as HD / SK left
//   fragments (q0..q7, named: an array of subgroup matrices indexed in a loop lives in local memory).
// - Keys stream through workgroup memory in tiles of KT, f16. S = q·kᵀ of a tile is KT / SN result fragments a
//   subgroup, stored to workgroup memory, where the subgroup's H = SG / SM lanes of row r take KT / H of its scores
//   each: the causal and sequence masks, the max and sum. Lane h·SM + r reads its share from key (j + r) % KH on, so
//   that the SG lanes read SG different banks (one lane a row, reading in step, hit one bank 16 times: rows of
//   scores are KT = 32 floats apart).
// - Two passes over the keys, so that no output fragment is ever rescaled (a subgroup matrix cannot be scaled row by
//   row): the first takes each row's max m and sum l (online, each lane over its share of the keys, in registers;
//   the shares are joined through workgroup memory as the second pass starts), the second recomputes S,
//   writes P = 2^(s − m) / l as f16 and adds P·V into HD / SN result fragments (o0..o7). One more q·kᵀ than a
//   one-pass flash attention, no rescaling, and the row log-sum-exp falls out of the first pass.
// - The epilogue passes each output fragment through workgroup memory to o, row by row (rows of another token or
//   head are not evenly strided).
// q arrives f32; f16 holds q·scale·log2(e), k, v and P (at most 1): 11 significant bits, scores and sums in f32.
// Variant consts: SM, SN, SK (the subgroup matrix config, 16 each), SG (subgroup size), HD (128), NSG (subgroups a
// workgroup: 1, 2 or 4).
struct Params { T: u32, nHeads: u32, nKv: u32, group: u32, numSeqs: u32, scale2: f32, _p0: u32, _p1: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<vec4f>;
@group(0) @binding(2) var<storage, read> k: array<vec4f>;
@group(0) @binding(3) var<storage, read> v: array<vec4f>;
@group(0) @binding(4) var<storage, read> seqStarts: array<u32>;
@group(0) @binding(5) var<storage, read_write> o: array<f32>;
@group(0) @binding(6) var<storage, read_write> lse: array<f32>;

alias Left = subgroup_matrix_left<f16, SK, SM>;
alias Right = subgroup_matrix_right<f16, SN, SK>;
alias Acc = subgroup_matrix_result<f32, SN, SM>;

const_assert SM == 16u && SN == 16u && SK == 16u && HD == 128u && SG >= SM && NSG >= 1u && NSG <= 4u;
const THREADS = NSG * SG;
const ROWS = NSG * SM;         // flat query rows a workgroup
const KT = 32u;                // keys a tile
const NS = HD / 4u;            // vec4 of a head row
const LD = HD + 8u;            // staged row of q, k or v (f16; padded to stagger banks)
const LDP = KT + 8u;           // row of P (f16)
const MASKED = -3.0e38;        // score of a masked key (2^(it − m) is 0)
const H = SG / SM;             // lanes a row
const KH = KT / H;             // keys a lane of each tile
const_assert SG % SM == 0u && KT % H == 0u;

// The K tile then the V tile; before the first tile the ROWS q rows (the same size).
var<workgroup> kv: array<f16, 2u * KT * LD>;
const_assert ROWS * LD <= 2u * KT * LD;
var<workgroup> sTile: array<f32, ROWS * KT>;   // a subgroup's SM x KT scores; in the epilogue its output fragment
var<workgroup> pTile: array<f16, ROWS * LDP>;
var<workgroup> shares: array<vec2f, ROWS * H>;  // each lane's (max, sum) over its share of a row's keys
// (first key, end) in .xy. A vec4u, not a vec2u: with a vec2u the H100 read this kernel's fragments 8 bytes early
// (4 f16 along the head dimension); with every workgroup variable a multiple of 16 bytes they are right there
// (bench/RESULTS.md, 2026-12-06).
var<workgroup> keyRange: vec4u;

fn seq_start(t: u32) -> u32 {
  var lo = 0u;
  var hi = p.numSeqs;
  while (hi - lo > 1u) {
    let mid = (lo + hi) / 2u;
    if (seqStarts[mid] <= t) { lo = mid; } else { hi = mid; }
  }
  return seqStarts[lo];
}

// Row of q / o / lse (in heads) of flat query row f: token f / group, head kvh·group + f % group.
fn row_of(f: u32, kvh: u32) -> u32 {
  return (f / p.group) * p.nHeads + kvh * p.group + f % p.group;
}

fn stage4(at: u32, x: vec4f) {
  kv[at] = f16(x.x);
  kv[at + 1u] = f16(x.y);
  kv[at + 2u] = f16(x.z);
  kv[at + 3u] = f16(x.w);
}

// The tile's keys kb.. (zeros past `end`) into kv: K rows at 0, with V rows at KT·LD when `withV`.
fn stage_keys(kb: u32, end: u32, kvh: u32, withV: bool, lid: u32) {
  for (var i = lid; i < KT * NS; i += THREADS) {
    let key = kb + i / NS;
    let at = (i / NS) * LD + 4u * (i % NS);
    let src = (key * p.nKv + kvh) * NS + i % NS;
    let inside = key < end;
    stage4(at, select(vec4f(0.0), k[min(src, arrayLength(&k) - 1u)], inside));
    if (withV) { stage4(KT * LD + at, select(vec4f(0.0), v[min(src, arrayLength(&v) - 1u)], inside)); }
  }
}

@compute @workgroup_size(THREADS)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(subgroup_id) sid: u32,
        @builtin(subgroup_invocation_id) lane: u32, @builtin(local_invocation_index) lid: u32) {
  let kvh = wid.y;
  let flat0 = (nwg.x - 1u - wid.x) * ROWS;   // last rows (most keys under the causal mask) start first
  let nRows = p.T * p.group;
  // Lanes h·SM + r of subgroup sid keep the softmax state of flat row flat0 + sid·SM + r over share h of the keys;
  // rows past the end are computed as the last row (their q is zero) and stored nowhere.
  let r = lane % SM;
  let h = lane / SM;
  let mine = flat0 + sid * SM + r;
  let rowT = min(mine, nRows - 1u) / p.group;
  let rowStart = seq_start(rowT);
  if (lid == 0u) {
    // Keys from the start of the first row's sequence to the last row's token (rows are in token order).
    let last = min(flat0 + ROWS, nRows) - 1u;
    keyRange = vec4u(seq_start(flat0 / p.group), last / p.group + 1u, 0u, 0u);
  }
  for (var i = lid; i < ROWS * NS; i += THREADS) {
    let f = flat0 + i / NS;
    var x = vec4f(0.0);
    if (f < nRows) { x = q[row_of(f, kvh) * NS + i % NS] * p.scale2; }
    stage4((i / NS) * LD + 4u * (i % NS), x);
  }
  let range = workgroupUniformLoad(&keyRange).xy;
  let qb = sid * SM * LD;
  let q0 = subgroupMatrixLoad<Left, row_major>(&kv, qb + 0u * SK, LD);
  let q1 = subgroupMatrixLoad<Left, row_major>(&kv, qb + 1u * SK, LD);
  let q2 = subgroupMatrixLoad<Left, row_major>(&kv, qb + 2u * SK, LD);
  let q3 = subgroupMatrixLoad<Left, row_major>(&kv, qb + 3u * SK, LD);
  let q4 = subgroupMatrixLoad<Left, row_major>(&kv, qb + 4u * SK, LD);
  let q5 = subgroupMatrixLoad<Left, row_major>(&kv, qb + 5u * SK, LD);
  let q6 = subgroupMatrixLoad<Left, row_major>(&kv, qb + 6u * SK, LD);
  let q7 = subgroupMatrixLoad<Left, row_major>(&kv, qb + 7u * SK, LD);

  var o0 = Acc();
  var o1 = Acc();
  var o2 = Acc();
  var o3 = Acc();
  var o4 = Acc();
  var o5 = Acc();
  var o6 = Acc();
  var o7 = Acc();
  var m = -1.0e30;
  var l = 0.0;
  var invL = 0.0;
  let tiles = (range.y - range.x + KT - 1u) / KT;
  let srow = sid * SM * KT;  // this subgroup's scores in sTile
  let prow = sid * SM * LDP;
  // Iterations 0 .. tiles − 1: the first pass (max and sum); tiles .. 2·tiles − 1: the second (P·V).
  for (var it = 0u; it < 2u * tiles; it++) {
    let second = it >= tiles;
    let kb = range.x + (it % tiles) * KT;
    workgroupBarrier();  // the last tile's fragments (and at first the q fragments) are loaded
    if (it == tiles) { shares[(sid * SM + r) * H + h] = vec2f(m, l); }
    stage_keys(kb, range.y, kvh, second, lid);
    workgroupBarrier();
    if (it == tiles) {
      // The row's max and sum over all its keys, from its lanes' shares.
      let at = (sid * SM + r) * H;
      var mr = -1.0e30;
      for (var i = 0u; i < H; i++) { mr = max(mr, shares[at + i].x); }
      var lr = 0.0;
      for (var i = 0u; i < H; i++) { lr += shares[at + i].y * exp2(shares[at + i].x - mr); }
      m = mr;
      l = lr;
      invL = 1.0 / l;  // every row sees its own token: l >= 1
    }
    // S: KT / SN = 2 fragments of SM rows x SN keys, over HD / SK depth steps (k read column-major: key-major rows).
    var s0 = Acc();
    var s1 = Acc();
    s0 = subgroupMatrixMultiplyAccumulate(q0, subgroupMatrixLoad<Right, col_major>(&kv, 0u * SK, LD), s0);
    s1 = subgroupMatrixMultiplyAccumulate(q0, subgroupMatrixLoad<Right, col_major>(&kv, SN * LD + 0u * SK, LD), s1);
    s0 = subgroupMatrixMultiplyAccumulate(q1, subgroupMatrixLoad<Right, col_major>(&kv, 1u * SK, LD), s0);
    s1 = subgroupMatrixMultiplyAccumulate(q1, subgroupMatrixLoad<Right, col_major>(&kv, SN * LD + 1u * SK, LD), s1);
    s0 = subgroupMatrixMultiplyAccumulate(q2, subgroupMatrixLoad<Right, col_major>(&kv, 2u * SK, LD), s0);
    s1 = subgroupMatrixMultiplyAccumulate(q2, subgroupMatrixLoad<Right, col_major>(&kv, SN * LD + 2u * SK, LD), s1);
    s0 = subgroupMatrixMultiplyAccumulate(q3, subgroupMatrixLoad<Right, col_major>(&kv, 3u * SK, LD), s0);
    s1 = subgroupMatrixMultiplyAccumulate(q3, subgroupMatrixLoad<Right, col_major>(&kv, SN * LD + 3u * SK, LD), s1);
    s0 = subgroupMatrixMultiplyAccumulate(q4, subgroupMatrixLoad<Right, col_major>(&kv, 4u * SK, LD), s0);
    s1 = subgroupMatrixMultiplyAccumulate(q4, subgroupMatrixLoad<Right, col_major>(&kv, SN * LD + 4u * SK, LD), s1);
    s0 = subgroupMatrixMultiplyAccumulate(q5, subgroupMatrixLoad<Right, col_major>(&kv, 5u * SK, LD), s0);
    s1 = subgroupMatrixMultiplyAccumulate(q5, subgroupMatrixLoad<Right, col_major>(&kv, SN * LD + 5u * SK, LD), s1);
    s0 = subgroupMatrixMultiplyAccumulate(q6, subgroupMatrixLoad<Right, col_major>(&kv, 6u * SK, LD), s0);
    s1 = subgroupMatrixMultiplyAccumulate(q6, subgroupMatrixLoad<Right, col_major>(&kv, SN * LD + 6u * SK, LD), s1);
    s0 = subgroupMatrixMultiplyAccumulate(q7, subgroupMatrixLoad<Right, col_major>(&kv, 7u * SK, LD), s0);
    s1 = subgroupMatrixMultiplyAccumulate(q7, subgroupMatrixLoad<Right, col_major>(&kv, SN * LD + 7u * SK, LD), s1);
    subgroupMatrixStore<row_major>(&sTile, srow, s0, KT);
    subgroupMatrixStore<row_major>(&sTile, srow + SN, s1, KT);
    workgroupBarrier();
    let sr = srow + r * KT;
    if (!second) {
      var mt = m;
      for (var j = 0u; j < KH; j++) {
        let c = h * KH + (j + r) % KH;
        if (kb + c >= rowStart && kb + c <= rowT) { mt = max(mt, sTile[sr + c]); }
      }
      l *= exp2(m - mt);
      m = mt;
      for (var j = 0u; j < KH; j++) {
        let c = h * KH + (j + r) % KH;
        if (kb + c >= rowStart && kb + c <= rowT) { l += exp2(sTile[sr + c] - m); }
      }
    } else {
      for (var j = 0u; j < KH; j++) {
        let c = h * KH + (j + r) % KH;
        let s = select(MASKED, sTile[sr + c], kb + c >= rowStart && kb + c <= rowT);
        pTile[prow + r * LDP + c] = f16(exp2(s - m) * invL);
      }
    }
    if (second) {
      workgroupBarrier();
      // o += P·V over the tile's KT / SK depth steps; V rows are key-major (row-major right fragments).
      for (var kk = 0u; kk < KT; kk += SK) {
        let pf = subgroupMatrixLoad<Left, row_major>(&pTile, prow + kk, LDP);
        let vb = KT * LD + kk * LD;
        o0 = subgroupMatrixMultiplyAccumulate(pf, subgroupMatrixLoad<Right, row_major>(&kv, vb + 0u * SN, LD), o0);
        o1 = subgroupMatrixMultiplyAccumulate(pf, subgroupMatrixLoad<Right, row_major>(&kv, vb + 1u * SN, LD), o1);
        o2 = subgroupMatrixMultiplyAccumulate(pf, subgroupMatrixLoad<Right, row_major>(&kv, vb + 2u * SN, LD), o2);
        o3 = subgroupMatrixMultiplyAccumulate(pf, subgroupMatrixLoad<Right, row_major>(&kv, vb + 3u * SN, LD), o3);
        o4 = subgroupMatrixMultiplyAccumulate(pf, subgroupMatrixLoad<Right, row_major>(&kv, vb + 4u * SN, LD), o4);
        o5 = subgroupMatrixMultiplyAccumulate(pf, subgroupMatrixLoad<Right, row_major>(&kv, vb + 5u * SN, LD), o5);
        o6 = subgroupMatrixMultiplyAccumulate(pf, subgroupMatrixLoad<Right, row_major>(&kv, vb + 6u * SN, LD), o6);
        o7 = subgroupMatrixMultiplyAccumulate(pf, subgroupMatrixLoad<Right, row_major>(&kv, vb + 7u * SN, LD), o7);
      }
    }
  }

  if (h == 0u && mine < nRows) { lse[row_of(mine, kvh)] = (m + log2(l)) * 0.6931471805599453; }
  workgroupBarrier();  // the last tile's scores are read
  subgroupMatrixStore<row_major>(&sTile, srow, o0, SN);
  emit(flat0 + sid * SM, 0u, srow, kvh, lane);
  subgroupMatrixStore<row_major>(&sTile, srow, o1, SN);
  emit(flat0 + sid * SM, 1u, srow, kvh, lane);
  subgroupMatrixStore<row_major>(&sTile, srow, o2, SN);
  emit(flat0 + sid * SM, 2u, srow, kvh, lane);
  subgroupMatrixStore<row_major>(&sTile, srow, o3, SN);
  emit(flat0 + sid * SM, 3u, srow, kvh, lane);
  subgroupMatrixStore<row_major>(&sTile, srow, o4, SN);
  emit(flat0 + sid * SM, 4u, srow, kvh, lane);
  subgroupMatrixStore<row_major>(&sTile, srow, o5, SN);
  emit(flat0 + sid * SM, 5u, srow, kvh, lane);
  subgroupMatrixStore<row_major>(&sTile, srow, o6, SN);
  emit(flat0 + sid * SM, 6u, srow, kvh, lane);
  subgroupMatrixStore<row_major>(&sTile, srow, o7, SN);
  emit(flat0 + sid * SM, 7u, srow, kvh, lane);
}

// Writes output fragment j (head dims j·SN ..) of flat rows f0 .. f0 + SM − 1, just stored at sTile[at..] (SM x SN,
// row-major), to o; rows past the end are not written.
fn emit(f0: u32, j: u32, at: u32, kvh: u32, lane: u32) {
  workgroupBarrier();
  let nRows = p.T * p.group;
  for (var e = lane; e < SM * SN; e += SG) {
    let f = f0 + e / SN;
    if (f < nRows) { o[row_of(f, kvh) * HD + j * SN + e % SN] = sTile[at + e]; }
  }
  workgroupBarrier();  // before the next fragment overwrites sTile
}
