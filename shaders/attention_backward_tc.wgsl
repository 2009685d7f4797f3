// Backward of attention_prefill.wgsl on tensor cores, version 3 of attention_backward.wgsl (needs subgroup
// matrices: src/kernels/attention.ts, attentionTcUnavailable). The FlashAttention-2 scheme of versions 1 and 2 with
// its products as 16 x 16 subgroup matrices over f16 tiles, f32 accumulation:
//   dkdv     a workgroup keeps NSG·16 keys, 16 a subgroup, and streams the query rows (every head of the group) after
//            them in tiles of 16: Sᵀ = K·qᵀ and dPᵀ = V·dO'ᵀ, then per element P = 2^(s·scale2 − lse2) under the masks
//            and dS' = P·(dP' − D'), then dV' += Pᵀ·dO' and dK' += dS'ᵀ·q.
//   dq_rows  a workgroup keeps NSG·16 flat query rows and streams the keys in tiles of 32: S = q·Kᵀ, dP' = dO'·Vᵀ,
//            dS' as above, dQ' += dS'·K.
// Range: f16 keeps 11 significant bits from 2^-14 to 2^16, and dO (a loss gradient) may sit anywhere in f32's range.
// So each sequence's dO is multiplied by a power of two w that brings its largest entry into [1, 2) (entries
// `delta` and `scales` below, before the kernels): dO' = w·dO, so dP', D' and dS' are w times dP, D and dS.
// Every product a key or a row accumulates comes from its own sequence (the masks), so each accumulator holds w
// times its gradient, divided out exactly in the epilogue. P (at most 1), q, k and v are stored as they are.
// Variant consts: SM, SN, SK (the subgroup matrix config, 16 each), SG (subgroup size), HD (128), NSG (subgroups a
// workgroup: 1 or 2).
struct Params { T: u32, nHeads: u32, nKv: u32, group: u32, numSeqs: u32, scale2: f32, scale: f32, _p0: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<vec4f>;
@group(0) @binding(2) var<storage, read> k: array<vec4f>;
@group(0) @binding(3) var<storage, read> v: array<vec4f>;
@group(0) @binding(4) var<storage, read> dO: array<vec4f>;
// Per (token, head): (lse·log2(e), D = Σ dO·o, bitcast sequence start, w); `delta` leaves the sequence's index in w.
@group(0) @binding(5) var<storage, read_write> stats: array<vec4f>;
@group(0) @binding(6) var<storage, read> seqStarts: array<u32>;
@group(0) @binding(7) var<storage, read_write> dk: array<f32>;
@group(0) @binding(8) var<storage, read_write> dv: array<f32>;
@group(0) @binding(9) var<storage, read_write> dq: array<f32>;
@group(0) @binding(10) var<storage, read> o: array<vec4f>;
@group(0) @binding(11) var<storage, read> lse: array<f32>;
// Per sequence: the bits of its largest |dO| (positive floats order as their bits), zeroed by the host.
@group(0) @binding(12) var<storage, read_write> seqMax: array<atomic<u32>>;

alias Left = subgroup_matrix_left<f16, SK, SM>;
alias Right = subgroup_matrix_right<f16, SN, SK>;
alias Acc = subgroup_matrix_result<f32, SN, SM>;

const_assert SM == 16u && SN == 16u && SK == 16u && HD == 128u && NSG >= 1u && NSG <= 2u;
const THREADS = NSG * SG;
const NS = HD / 4u;            // vec4 of a head row
const LD = HD + 8u;            // staged row of q, k, v or dO' (f16; padded to stagger banks)
const FRAG = SM * SN;

fn seq_index(t: u32) -> u32 {
  var lo = 0u;
  var hi = p.numSeqs;
  while (hi - lo > 1u) {
    let mid = (lo + hi) / 2u;
    if (seqStarts[mid] <= t) { lo = mid; } else { hi = mid; }
  }
  return lo;
}

// Row of q / dO / stats (in heads) of flat query row f: token f / group, head kvh·group + f % group.
fn row_of(f: u32, kvh: u32) -> u32 {
  return (f / p.group) * p.nHeads + kvh * p.group + f % p.group;
}

// ---- delta, scales: one thread per (token, head) ----

@compute @workgroup_size(64)
fn delta(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let row = gid.x + gid.y * nwg.x * 64u;
  if (row >= p.T * p.nHeads) { return; }
  var d = 0.0;
  var amax = 0.0;
  for (var i = 0u; i < NS; i++) {
    let g = dO[row * NS + i];
    d += dot(g, o[row * NS + i]);
    let a = abs(g);
    amax = max(amax, max(max(a.x, a.y), max(a.z, a.w)));
  }
  let s = seq_index(row / p.nHeads);
  stats[row] = vec4f(lse[row] * 1.4426950408889634, d, bitcast<f32>(seqStarts[s]), bitcast<f32>(s));
  atomicMax(&seqMax[s], bitcast<u32>(amax));
}

@compute @workgroup_size(64)
fn scales(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let row = gid.x + gid.y * nwg.x * 64u;
  if (row >= p.T * p.nHeads) { return; }
  let bits = atomicLoad(&seqMax[bitcast<u32>(stats[row].w)]);
  // 2^-e for the largest entry's exponent e (read from its bits: exact), so that entry lies in [1, 2) and
  // dP' = dO'·v stays under f16's 65504 for |v| up to 256; w within [2^-126, 2^120] (all zeros: 2^120, harmless).
  let e = i32((bits >> 23u) & 0xffu) - 127;
  stats[row].w = bitcast<f32>(u32(clamp(127 - e, 1, 247)) << 23u);
}

// ---- staging (f32 rows as f16) ----

// Two functions, one per array: an entry point's workgroup memory counts every array it mentions.
fn stage_kvs(at: u32, x: vec4f) {
  kvs[at] = f16(x.x); kvs[at + 1u] = f16(x.y); kvs[at + 2u] = f16(x.z); kvs[at + 3u] = f16(x.w);
}
fn stage_qdo(at: u32, x: vec4f) {
  qdo[at] = f16(x.x); qdo[at + 1u] = f16(x.y); qdo[at + 2u] = f16(x.z); qdo[at + 3u] = f16(x.w);
}

// ---- dkdv: NSG·16 keys a workgroup, query tiles of QT flat rows ----

const KEYS = NSG * SM;
const QT = SN;                  // rows a tile: the columns of Sᵀ's one fragment
var<workgroup> kvs: array<f16, 2u * 2u * 16u * LD>;  // K rows, then V rows (dkdv: KEYS each; dq_rows: a key tile)
var<workgroup> qdo: array<f16, 2u * QT * LD>;        // the tile's q rows, then its dO' rows
var<workgroup> sdp: array<f32, NSG * 2u * FRAG>;     // a subgroup's Sᵀ then dPᵀ; in the epilogue its output fragment
var<workgroup> pds: array<f16, NSG * 2u * FRAG>;     // a subgroup's Pᵀ then dS'ᵀ
var<workgroup> rowTok: array<u32, QT>;
var<workgroup> rowStart: array<u32, QT>;
var<workgroup> rowStat: array<vec2f, QT>;            // (lse2, D')
var<workgroup> range2: vec4u;  // .xy; a vec4u for the reason keyRange is one in attention_prefill_tc.wgsl

@compute @workgroup_size(THREADS)
fn dkdv(@builtin(workgroup_id) wid: vec3u, @builtin(subgroup_id) sid: u32, @builtin(subgroup_invocation_id) lane: u32,
        @builtin(local_invocation_index) lid: u32) {
  let kvh = wid.y;
  let key0 = wid.x * KEYS;
  for (var i = lid; i < KEYS * NS; i += THREADS) {
    let key = key0 + i / NS;
    let src = (min(key, p.T - 1u) * p.nKv + kvh) * NS + i % NS;
    let at = (i / NS) * LD + 4u * (i % NS);
    stage_kvs(at, select(vec4f(0.0), k[src], key < p.T));
    stage_kvs(KEYS * LD + at, select(vec4f(0.0), v[src], key < p.T));
  }
  if (lid == 0u) {
    // Query rows from the first key's token to the end of the last key's sequence, every head of the group.
    let last = min(key0 + KEYS, p.T) - 1u;
    range2 = vec4u(key0 * p.group, seqStarts[seq_index(last) + 1u] * p.group, 0u, 0u);
  }
  let range = workgroupUniformLoad(&range2).xy;
  let kb = sid * SM * LD;          // this subgroup's K rows (V rows KEYS·LD further)
  let sb = sid * 2u * FRAG;        // its scores in sdp, its probabilities in pds
  var dv0 = Acc(); var dv1 = Acc(); var dv2 = Acc(); var dv3 = Acc();
  var dv4 = Acc(); var dv5 = Acc(); var dv6 = Acc(); var dv7 = Acc();
  var dk0 = Acc(); var dk1 = Acc(); var dk2 = Acc(); var dk3 = Acc();
  var dk4 = Acc(); var dk5 = Acc(); var dk6 = Acc(); var dk7 = Acc();
  for (var fb = range.x; fb < range.y; fb += QT) {
    workgroupBarrier();  // the last tile's fragments are loaded
    for (var i = lid; i < QT * NS; i += THREADS) {
      let f = fb + i / NS;
      var qq = vec4f(0.0);
      var gg = vec4f(0.0);
      if (f < range.y) {
        let row = row_of(f, kvh);
        qq = q[row * NS + i % NS];
        gg = dO[row * NS + i % NS] * stats[row].w;
      }
      let at = (i / NS) * LD + 4u * (i % NS);
      stage_qdo(at, qq);
      stage_qdo(QT * LD + at, gg);
    }
    if (lid < QT) {
      let f = fb + lid;
      if (f < range.y) {
        let st = stats[row_of(f, kvh)];
        rowTok[lid] = f / p.group;
        rowStart[lid] = bitcast<u32>(st.z);
        rowStat[lid] = vec2f(st.x, st.y * st.w);
      } else {
        rowTok[lid] = 0u;   // start 1 > token 0: no key passes the mask
        rowStart[lid] = 1u;
        rowStat[lid] = vec2f(0.0);
      }
    }
    workgroupBarrier();
    // Sᵀ [keys x rows] and dPᵀ over HD / SK depth steps (q and dO' read column-major: row-major rows).
    var st = Acc();
    var dpt = Acc();
    for (var j = 0u; j < HD / SK; j++) {
      st = subgroupMatrixMultiplyAccumulate(subgroupMatrixLoad<Left, row_major>(&kvs, kb + j * SK, LD), subgroupMatrixLoad<Right, col_major>(&qdo, j * SK, LD), st);
      dpt = subgroupMatrixMultiplyAccumulate(subgroupMatrixLoad<Left, row_major>(&kvs, KEYS * LD + kb + j * SK, LD), subgroupMatrixLoad<Right, col_major>(&qdo, QT * LD + j * SK, LD), dpt);
    }
    subgroupMatrixStore<row_major>(&sdp, sb, st, QT);
    subgroupMatrixStore<row_major>(&sdp, sb + FRAG, dpt, QT);
    workgroupBarrier();
    for (var e = lane; e < FRAG; e += SG) {
      let key = key0 + sid * SM + e / QT;
      let r = e % QT;
      let stat = rowStat[r];
      let pr = select(0.0, exp2(sdp[sb + e] * p.scale2 - stat.x), key >= rowStart[r] && key <= rowTok[r]);
      pds[sb + e] = f16(pr);
      pds[sb + FRAG + e] = f16(pr * (sdp[sb + FRAG + e] - stat.y));
    }
    workgroupBarrier();
    let pl = subgroupMatrixLoad<Left, row_major>(&pds, sb, QT);
    let dsl = subgroupMatrixLoad<Left, row_major>(&pds, sb + FRAG, QT);
    dv0 = subgroupMatrixMultiplyAccumulate(pl, subgroupMatrixLoad<Right, row_major>(&qdo, QT * LD + 0u * SN, LD), dv0);
    dv1 = subgroupMatrixMultiplyAccumulate(pl, subgroupMatrixLoad<Right, row_major>(&qdo, QT * LD + 1u * SN, LD), dv1);
    dv2 = subgroupMatrixMultiplyAccumulate(pl, subgroupMatrixLoad<Right, row_major>(&qdo, QT * LD + 2u * SN, LD), dv2);
    dv3 = subgroupMatrixMultiplyAccumulate(pl, subgroupMatrixLoad<Right, row_major>(&qdo, QT * LD + 3u * SN, LD), dv3);
    dv4 = subgroupMatrixMultiplyAccumulate(pl, subgroupMatrixLoad<Right, row_major>(&qdo, QT * LD + 4u * SN, LD), dv4);
    dv5 = subgroupMatrixMultiplyAccumulate(pl, subgroupMatrixLoad<Right, row_major>(&qdo, QT * LD + 5u * SN, LD), dv5);
    dv6 = subgroupMatrixMultiplyAccumulate(pl, subgroupMatrixLoad<Right, row_major>(&qdo, QT * LD + 6u * SN, LD), dv6);
    dv7 = subgroupMatrixMultiplyAccumulate(pl, subgroupMatrixLoad<Right, row_major>(&qdo, QT * LD + 7u * SN, LD), dv7);
    dk0 = subgroupMatrixMultiplyAccumulate(dsl, subgroupMatrixLoad<Right, row_major>(&qdo, 0u * SN, LD), dk0);
    dk1 = subgroupMatrixMultiplyAccumulate(dsl, subgroupMatrixLoad<Right, row_major>(&qdo, 1u * SN, LD), dk1);
    dk2 = subgroupMatrixMultiplyAccumulate(dsl, subgroupMatrixLoad<Right, row_major>(&qdo, 2u * SN, LD), dk2);
    dk3 = subgroupMatrixMultiplyAccumulate(dsl, subgroupMatrixLoad<Right, row_major>(&qdo, 3u * SN, LD), dk3);
    dk4 = subgroupMatrixMultiplyAccumulate(dsl, subgroupMatrixLoad<Right, row_major>(&qdo, 4u * SN, LD), dk4);
    dk5 = subgroupMatrixMultiplyAccumulate(dsl, subgroupMatrixLoad<Right, row_major>(&qdo, 5u * SN, LD), dk5);
    dk6 = subgroupMatrixMultiplyAccumulate(dsl, subgroupMatrixLoad<Right, row_major>(&qdo, 6u * SN, LD), dk6);
    dk7 = subgroupMatrixMultiplyAccumulate(dsl, subgroupMatrixLoad<Right, row_major>(&qdo, 7u * SN, LD), dk7);
  }
  workgroupBarrier();  // the last tile's scores are read
  subgroupMatrixStore<row_major>(&sdp, sb, dv0, SN);
  emit_kv(key0 + sid * SM, 0u, sb, kvh, lane, false);
  subgroupMatrixStore<row_major>(&sdp, sb, dv1, SN);
  emit_kv(key0 + sid * SM, 1u, sb, kvh, lane, false);
  subgroupMatrixStore<row_major>(&sdp, sb, dv2, SN);
  emit_kv(key0 + sid * SM, 2u, sb, kvh, lane, false);
  subgroupMatrixStore<row_major>(&sdp, sb, dv3, SN);
  emit_kv(key0 + sid * SM, 3u, sb, kvh, lane, false);
  subgroupMatrixStore<row_major>(&sdp, sb, dv4, SN);
  emit_kv(key0 + sid * SM, 4u, sb, kvh, lane, false);
  subgroupMatrixStore<row_major>(&sdp, sb, dv5, SN);
  emit_kv(key0 + sid * SM, 5u, sb, kvh, lane, false);
  subgroupMatrixStore<row_major>(&sdp, sb, dv6, SN);
  emit_kv(key0 + sid * SM, 6u, sb, kvh, lane, false);
  subgroupMatrixStore<row_major>(&sdp, sb, dv7, SN);
  emit_kv(key0 + sid * SM, 7u, sb, kvh, lane, false);
  subgroupMatrixStore<row_major>(&sdp, sb, dk0, SN);
  emit_kv(key0 + sid * SM, 0u, sb, kvh, lane, true);
  subgroupMatrixStore<row_major>(&sdp, sb, dk1, SN);
  emit_kv(key0 + sid * SM, 1u, sb, kvh, lane, true);
  subgroupMatrixStore<row_major>(&sdp, sb, dk2, SN);
  emit_kv(key0 + sid * SM, 2u, sb, kvh, lane, true);
  subgroupMatrixStore<row_major>(&sdp, sb, dk3, SN);
  emit_kv(key0 + sid * SM, 3u, sb, kvh, lane, true);
  subgroupMatrixStore<row_major>(&sdp, sb, dk4, SN);
  emit_kv(key0 + sid * SM, 4u, sb, kvh, lane, true);
  subgroupMatrixStore<row_major>(&sdp, sb, dk5, SN);
  emit_kv(key0 + sid * SM, 5u, sb, kvh, lane, true);
  subgroupMatrixStore<row_major>(&sdp, sb, dk6, SN);
  emit_kv(key0 + sid * SM, 6u, sb, kvh, lane, true);
  subgroupMatrixStore<row_major>(&sdp, sb, dk7, SN);
  emit_kv(key0 + sid * SM, 7u, sb, kvh, lane, true);
}

// Writes fragment j (head dims j·SN ..) of dV (or of dK, times the score scale) for keys k0 .. k0 + SM − 1, just
// stored at sdp[at..], divided by their sequence's w; keys past T are not written.
fn emit_kv(k0: u32, j: u32, at: u32, kvh: u32, lane: u32, isK: bool) {
  workgroupBarrier();
  for (var e = lane; e < FRAG; e += SG) {
    let key = k0 + e / SN;
    if (key < p.T) {
      let x = sdp[at + e] / stats[key * p.nHeads].w;
      let i = (key * p.nKv + kvh) * HD + j * SN + e % SN;
      if (isK) { dk[i] = x * p.scale; } else { dv[i] = x; }
    }
  }
  workgroupBarrier();  // before the next fragment overwrites sdp
}

// ---- dq_rows: NSG·16 flat query rows a workgroup, key tiles of KT ----

const KT = 32u;
const LDS = KT + 8u;            // row of dS' (f16)
const KH = KT / (SG / SM);      // keys of a tile a lane (SG / SM lanes a row)
const_assert SG % SM == 0u && KT % (SG / SM) == 0u;
var<workgroup> sdq: array<f32, NSG * 2u * SM * KT>;  // a subgroup's S then dP' [rows x KT]; in the epilogue its output fragment
var<workgroup> dsq: array<f16, NSG * SM * LDS>;      // a subgroup's dS' [rows x KT]
var<workgroup> range1: vec4u;  // .xy, as range2

@compute @workgroup_size(THREADS)
fn dq_rows(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(subgroup_id) sid: u32,
           @builtin(subgroup_invocation_id) lane: u32, @builtin(local_invocation_index) lid: u32) {
  let kvh = wid.y;
  let rows: u32 = NSG * SM;
  let flat0 = (nwg.x - 1u - wid.x) * rows;   // last rows (most keys) start first
  let nRows = p.T * p.group;
  // Lanes h·SM + r take flat row flat0 + sid·SM + r (rows past the end as the last row), KH of each tile's keys
  // each, from key (j + r) % KH of their share on: the SG lanes read SG different banks of sdq (rows KT floats apart).
  let r = lane % SM;
  let h = lane / SM;
  let mine = min(flat0 + sid * SM + r, nRows - 1u);
  let stat = stats[row_of(mine, kvh)];
  let rowT = mine / p.group;
  let rowStart = bitcast<u32>(stat.z);
  let dScaled = stat.y * stat.w;
  if (lid == 0u) {
    // Keys from the first row's sequence start to the last row's token.
    let last = min(flat0 + rows, nRows) - 1u;
    range1 = vec4u(bitcast<u32>(stats[row_of(flat0, kvh)].z), last / p.group + 1u, 0u, 0u);
  }
  // q rows, then dO' rows, staged where the key tiles go, each loaded as HD / SK left fragments.
  for (var i = lid; i < rows * NS; i += THREADS) {
    let f = flat0 + i / NS;
    stage_kvs((i / NS) * LD + 4u * (i % NS), select(vec4f(0.0), q[row_of(min(f, nRows - 1u), kvh) * NS + i % NS], f < nRows));
  }
  let range = workgroupUniformLoad(&range1).xy;
  let rb = sid * SM * LD;
  let q0 = subgroupMatrixLoad<Left, row_major>(&kvs, rb + 0u * SK, LD);
  let q1 = subgroupMatrixLoad<Left, row_major>(&kvs, rb + 1u * SK, LD);
  let q2 = subgroupMatrixLoad<Left, row_major>(&kvs, rb + 2u * SK, LD);
  let q3 = subgroupMatrixLoad<Left, row_major>(&kvs, rb + 3u * SK, LD);
  let q4 = subgroupMatrixLoad<Left, row_major>(&kvs, rb + 4u * SK, LD);
  let q5 = subgroupMatrixLoad<Left, row_major>(&kvs, rb + 5u * SK, LD);
  let q6 = subgroupMatrixLoad<Left, row_major>(&kvs, rb + 6u * SK, LD);
  let q7 = subgroupMatrixLoad<Left, row_major>(&kvs, rb + 7u * SK, LD);
  workgroupBarrier();
  for (var i = lid; i < rows * NS; i += THREADS) {
    let f = flat0 + i / NS;
    let row = row_of(min(f, nRows - 1u), kvh);
    stage_kvs((i / NS) * LD + 4u * (i % NS), select(vec4f(0.0), dO[row * NS + i % NS] * stats[row].w, f < nRows));
  }
  workgroupBarrier();
  let g0 = subgroupMatrixLoad<Left, row_major>(&kvs, rb + 0u * SK, LD);
  let g1 = subgroupMatrixLoad<Left, row_major>(&kvs, rb + 1u * SK, LD);
  let g2 = subgroupMatrixLoad<Left, row_major>(&kvs, rb + 2u * SK, LD);
  let g3 = subgroupMatrixLoad<Left, row_major>(&kvs, rb + 3u * SK, LD);
  let g4 = subgroupMatrixLoad<Left, row_major>(&kvs, rb + 4u * SK, LD);
  let g5 = subgroupMatrixLoad<Left, row_major>(&kvs, rb + 5u * SK, LD);
  let g6 = subgroupMatrixLoad<Left, row_major>(&kvs, rb + 6u * SK, LD);
  let g7 = subgroupMatrixLoad<Left, row_major>(&kvs, rb + 7u * SK, LD);

  var dq0 = Acc(); var dq1 = Acc(); var dq2 = Acc(); var dq3 = Acc();
  var dq4 = Acc(); var dq5 = Acc(); var dq6 = Acc(); var dq7 = Acc();
  let sb = sid * 2u * SM * KT;
  let db = sid * SM * LDS;
  for (var kb = range.x; kb < range.y; kb += KT) {
    workgroupBarrier();  // the last tile's (at first the dO' rows') fragments are loaded
    for (var i = lid; i < KT * NS; i += THREADS) {
      let key = kb + i / NS;
      let src = (min(key, p.T - 1u) * p.nKv + kvh) * NS + i % NS;
      let at = (i / NS) * LD + 4u * (i % NS);
      stage_kvs(at, select(vec4f(0.0), k[src], key < range.y));
      stage_kvs(KT * LD + at, select(vec4f(0.0), v[src], key < range.y));
    }
    workgroupBarrier();
    // S and dP' [rows x keys]: two fragments each over HD / SK depth steps (K and V rows read column-major).
    var s0 = Acc(); var s1 = Acc(); var d0 = Acc(); var d1 = Acc();
    s0 = subgroupMatrixMultiplyAccumulate(q0, subgroupMatrixLoad<Right, col_major>(&kvs, 0u * SK, LD), s0);
    s1 = subgroupMatrixMultiplyAccumulate(q0, subgroupMatrixLoad<Right, col_major>(&kvs, SN * LD + 0u * SK, LD), s1);
    d0 = subgroupMatrixMultiplyAccumulate(g0, subgroupMatrixLoad<Right, col_major>(&kvs, KT * LD + 0u * SK, LD), d0);
    d1 = subgroupMatrixMultiplyAccumulate(g0, subgroupMatrixLoad<Right, col_major>(&kvs, (KT + SN) * LD + 0u * SK, LD), d1);
    s0 = subgroupMatrixMultiplyAccumulate(q1, subgroupMatrixLoad<Right, col_major>(&kvs, 1u * SK, LD), s0);
    s1 = subgroupMatrixMultiplyAccumulate(q1, subgroupMatrixLoad<Right, col_major>(&kvs, SN * LD + 1u * SK, LD), s1);
    d0 = subgroupMatrixMultiplyAccumulate(g1, subgroupMatrixLoad<Right, col_major>(&kvs, KT * LD + 1u * SK, LD), d0);
    d1 = subgroupMatrixMultiplyAccumulate(g1, subgroupMatrixLoad<Right, col_major>(&kvs, (KT + SN) * LD + 1u * SK, LD), d1);
    s0 = subgroupMatrixMultiplyAccumulate(q2, subgroupMatrixLoad<Right, col_major>(&kvs, 2u * SK, LD), s0);
    s1 = subgroupMatrixMultiplyAccumulate(q2, subgroupMatrixLoad<Right, col_major>(&kvs, SN * LD + 2u * SK, LD), s1);
    d0 = subgroupMatrixMultiplyAccumulate(g2, subgroupMatrixLoad<Right, col_major>(&kvs, KT * LD + 2u * SK, LD), d0);
    d1 = subgroupMatrixMultiplyAccumulate(g2, subgroupMatrixLoad<Right, col_major>(&kvs, (KT + SN) * LD + 2u * SK, LD), d1);
    s0 = subgroupMatrixMultiplyAccumulate(q3, subgroupMatrixLoad<Right, col_major>(&kvs, 3u * SK, LD), s0);
    s1 = subgroupMatrixMultiplyAccumulate(q3, subgroupMatrixLoad<Right, col_major>(&kvs, SN * LD + 3u * SK, LD), s1);
    d0 = subgroupMatrixMultiplyAccumulate(g3, subgroupMatrixLoad<Right, col_major>(&kvs, KT * LD + 3u * SK, LD), d0);
    d1 = subgroupMatrixMultiplyAccumulate(g3, subgroupMatrixLoad<Right, col_major>(&kvs, (KT + SN) * LD + 3u * SK, LD), d1);
    s0 = subgroupMatrixMultiplyAccumulate(q4, subgroupMatrixLoad<Right, col_major>(&kvs, 4u * SK, LD), s0);
    s1 = subgroupMatrixMultiplyAccumulate(q4, subgroupMatrixLoad<Right, col_major>(&kvs, SN * LD + 4u * SK, LD), s1);
    d0 = subgroupMatrixMultiplyAccumulate(g4, subgroupMatrixLoad<Right, col_major>(&kvs, KT * LD + 4u * SK, LD), d0);
    d1 = subgroupMatrixMultiplyAccumulate(g4, subgroupMatrixLoad<Right, col_major>(&kvs, (KT + SN) * LD + 4u * SK, LD), d1);
    s0 = subgroupMatrixMultiplyAccumulate(q5, subgroupMatrixLoad<Right, col_major>(&kvs, 5u * SK, LD), s0);
    s1 = subgroupMatrixMultiplyAccumulate(q5, subgroupMatrixLoad<Right, col_major>(&kvs, SN * LD + 5u * SK, LD), s1);
    d0 = subgroupMatrixMultiplyAccumulate(g5, subgroupMatrixLoad<Right, col_major>(&kvs, KT * LD + 5u * SK, LD), d0);
    d1 = subgroupMatrixMultiplyAccumulate(g5, subgroupMatrixLoad<Right, col_major>(&kvs, (KT + SN) * LD + 5u * SK, LD), d1);
    s0 = subgroupMatrixMultiplyAccumulate(q6, subgroupMatrixLoad<Right, col_major>(&kvs, 6u * SK, LD), s0);
    s1 = subgroupMatrixMultiplyAccumulate(q6, subgroupMatrixLoad<Right, col_major>(&kvs, SN * LD + 6u * SK, LD), s1);
    d0 = subgroupMatrixMultiplyAccumulate(g6, subgroupMatrixLoad<Right, col_major>(&kvs, KT * LD + 6u * SK, LD), d0);
    d1 = subgroupMatrixMultiplyAccumulate(g6, subgroupMatrixLoad<Right, col_major>(&kvs, (KT + SN) * LD + 6u * SK, LD), d1);
    s0 = subgroupMatrixMultiplyAccumulate(q7, subgroupMatrixLoad<Right, col_major>(&kvs, 7u * SK, LD), s0);
    s1 = subgroupMatrixMultiplyAccumulate(q7, subgroupMatrixLoad<Right, col_major>(&kvs, SN * LD + 7u * SK, LD), s1);
    d0 = subgroupMatrixMultiplyAccumulate(g7, subgroupMatrixLoad<Right, col_major>(&kvs, KT * LD + 7u * SK, LD), d0);
    d1 = subgroupMatrixMultiplyAccumulate(g7, subgroupMatrixLoad<Right, col_major>(&kvs, (KT + SN) * LD + 7u * SK, LD), d1);
    subgroupMatrixStore<row_major>(&sdq, sb, s0, KT);
    subgroupMatrixStore<row_major>(&sdq, sb + SN, s1, KT);
    subgroupMatrixStore<row_major>(&sdq, sb + SM * KT, d0, KT);
    subgroupMatrixStore<row_major>(&sdq, sb + SM * KT + SN, d1, KT);
    workgroupBarrier();
    for (var j = 0u; j < KH; j++) {
      let c = h * KH + (j + r) % KH;
      let key = kb + c;
      let at = sb + r * KT + c;
      let pr = select(0.0, exp2(sdq[at] * p.scale2 - stat.x), key >= rowStart && key <= rowT);
      dsq[db + r * LDS + c] = f16(pr * (sdq[at + SM * KT] - dScaled));
    }
    workgroupBarrier();
    // dQ' += dS'·K over the tile's KT / SK depth steps (K rows row-major).
    for (var kk = 0u; kk < KT; kk += SK) {
      let dl = subgroupMatrixLoad<Left, row_major>(&dsq, db + kk, LDS);
      dq0 = subgroupMatrixMultiplyAccumulate(dl, subgroupMatrixLoad<Right, row_major>(&kvs, kk * LD + 0u * SN, LD), dq0);
      dq1 = subgroupMatrixMultiplyAccumulate(dl, subgroupMatrixLoad<Right, row_major>(&kvs, kk * LD + 1u * SN, LD), dq1);
      dq2 = subgroupMatrixMultiplyAccumulate(dl, subgroupMatrixLoad<Right, row_major>(&kvs, kk * LD + 2u * SN, LD), dq2);
      dq3 = subgroupMatrixMultiplyAccumulate(dl, subgroupMatrixLoad<Right, row_major>(&kvs, kk * LD + 3u * SN, LD), dq3);
      dq4 = subgroupMatrixMultiplyAccumulate(dl, subgroupMatrixLoad<Right, row_major>(&kvs, kk * LD + 4u * SN, LD), dq4);
      dq5 = subgroupMatrixMultiplyAccumulate(dl, subgroupMatrixLoad<Right, row_major>(&kvs, kk * LD + 5u * SN, LD), dq5);
      dq6 = subgroupMatrixMultiplyAccumulate(dl, subgroupMatrixLoad<Right, row_major>(&kvs, kk * LD + 6u * SN, LD), dq6);
      dq7 = subgroupMatrixMultiplyAccumulate(dl, subgroupMatrixLoad<Right, row_major>(&kvs, kk * LD + 7u * SN, LD), dq7);
    }
  }
  workgroupBarrier();  // the last tile's scores are read
  let f0 = flat0 + sid * SM;
  subgroupMatrixStore<row_major>(&sdq, sb, dq0, SN);
  emit_q(f0, 0u, sb, kvh, lane);
  subgroupMatrixStore<row_major>(&sdq, sb, dq1, SN);
  emit_q(f0, 1u, sb, kvh, lane);
  subgroupMatrixStore<row_major>(&sdq, sb, dq2, SN);
  emit_q(f0, 2u, sb, kvh, lane);
  subgroupMatrixStore<row_major>(&sdq, sb, dq3, SN);
  emit_q(f0, 3u, sb, kvh, lane);
  subgroupMatrixStore<row_major>(&sdq, sb, dq4, SN);
  emit_q(f0, 4u, sb, kvh, lane);
  subgroupMatrixStore<row_major>(&sdq, sb, dq5, SN);
  emit_q(f0, 5u, sb, kvh, lane);
  subgroupMatrixStore<row_major>(&sdq, sb, dq6, SN);
  emit_q(f0, 6u, sb, kvh, lane);
  subgroupMatrixStore<row_major>(&sdq, sb, dq7, SN);
  emit_q(f0, 7u, sb, kvh, lane);
}

// Writes fragment j of dQ (times the score scale, divided by the row's w) for flat rows f0 .. f0 + SM − 1, just
// stored at sdq[at..]; rows past the end are not written.
fn emit_q(f0: u32, j: u32, at: u32, kvh: u32, lane: u32) {
  workgroupBarrier();
  let nRows = p.T * p.group;
  for (var e = lane; e < FRAG; e += SG) {
    let f = f0 + e / SN;
    if (f < nRows) {
      let row = row_of(f, kvh);
      dq[row * HD + j * SN + e % SN] = sdq[at + e] * p.scale / stats[row].w;
    }
  }
  workgroupBarrier();  // before the next fragment overwrites sdq
}
