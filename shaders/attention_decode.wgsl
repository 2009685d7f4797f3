// Decode attention over the paged KV cache, version 2: one query per sequence (a decode step), all G query
// heads of a GQA group against one kv head, one split of the keys (flash-decoding; `combine` in
// attention_paged.wgsl merges splits). Same bindings, parameters and outputs as attention_paged.wgsl's
// `decode` entry, which it replaces where it applies (src/kernels/attention.ts: HD a multiple of 8 (f16)
// or 4 (f32) with HD / LW lanes a power of two): that one moved 0.3 TB/s of KV on the H200, 4 rows a
// workgroup of which Qwen3's G = 2 were real, 6 barriers and 32-key serial loops per 128 keys.
// Here, per tile of 128 keys:
//   scores  thread t takes key t whole: its K row in 16-byte loads (8 f16 or 4 f32) against the G query
//           rows held in workgroup memory, so no partial sums cross threads;
//   softmax the tile's max per row by a tree over the 128 threads, then p = exp2(s − m) for the thread's key;
//   values  HD / LW threads per V row (16-byte loads, neighbouring threads neighbouring bytes), 128 / (HD / LW)
//           keys at once; each thread keeps G × LW accumulators, merged across key groups at the end.
// The cache is read as vec4<u32> whatever its type: f16 pairs unpacked with unpack2x16float (no shader-f16
// needed), f32 by bitcast. Variant consts: HD, G (query heads per kv head), F16 (the cache holds f16), SG (compile
// version 3 too; then also L), FUSE (below).
// FUSE (version 2): the step's q/k norm, RoPE and cache write happen here instead of in qk_norm_rope.wgsl's
// `to_cache` (one dispatch a layer fewer): q holds q_proj's rows as they come, each workgroup norms and rotates its
// G rows into workgroup memory, and the split that holds the new position norms and rotates the kv head's k row
// and writes it and the v row to the new token's slot, then reads them back after a storage barrier like any key.
// Same arithmetic as qk_norm_rope.wgsl with T = f32 (the cache's f16 by conversion, as CT(x) there). One query per
// sequence, so the token is the sequence (qStarts is not read).
struct Params {
  Tq: u32, nHeads: u32, nKv: u32, group: u32, pageSize: u32, maxPages: u32, splits: u32, chunk: u32,
  scale2: f32, eps: f32, _p1: u32, _p2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;               // [Tq, nHeads, HD]
#if FUSE
@group(0) @binding(2) var<storage, read_write> kc: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> vc: array<vec4<u32>>;
@group(0) @binding(9) var<storage, read> kIn: array<f32>;            // [Tq, nKv, HD]: k_proj's rows, before the norm
@group(0) @binding(10) var<storage, read> vIn: array<f32>;           // [Tq, nKv, HD]
@group(0) @binding(11) var<storage, read> qkw: array<f32>;           // [2, HD]: q_norm's weight, then k_norm's
@group(0) @binding(12) var<storage, read> cosT: array<f32>;          // [positions, HD / 2]
@group(0) @binding(13) var<storage, read> sinT: array<f32>;
#else
@group(0) @binding(2) var<storage, read> kc: array<vec4<u32>>;        // [slots, nKv, HD] f16 or f32, 16 bytes a load
@group(0) @binding(3) var<storage, read> vc: array<vec4<u32>>;
#endif
@group(0) @binding(4) var<storage, read> qStarts: array<u32>;
@group(0) @binding(5) var<storage, read> qPositions: array<u32>;
@group(0) @binding(6) var<storage, read> pageTable: array<u32>;
// splits == 1: o [Tq, nHeads, HD]; else partial o [splits, Tq, nHeads, HD] (unnormalised)
@group(0) @binding(7) var<storage, read_write> out: array<f32>;
@group(0) @binding(8) var<storage, read_write> partML: array<vec2f>;  // [splits, Tq·nHeads]: (max, sum), log2 domain

const WG = 128u;
const LW = select(4u, 8u, F16);   // cache elements per 16-byte load
const NA = LW / 4u;               // vec4f per load
const LPR = u32(HD) / LW;         // loads per row (threads per V row)
const KG = WG / LPR;              // keys whose V rows are read at once
const QV = u32(HD) / 4u;          // vec4f per query row
const VU = 8u;                    // V rows a thread loads at once (the #unroll counts of its loops)
// The #unroll counts below, in the preprocessor's terms (it knows only the variant's consts):
const_assert VU == 8u && LPR == u32(HD) / (4u + 4u * u32(F16)) && NA == 1u + u32(F16) && KG == 128u / LPR && WG == 128u;
const MASKED = -3.0e38;

var<workgroup> qs: array<vec4f, G * QV>;
var<workgroup> red: array<f32, G * WG>;
var<workgroup> probs: array<f32, G * WG>;
var<workgroup> slots: array<u32, WG>;
var<workgroup> merged: array<f32, KG * u32(HD)>;

/** The 16 bytes at i as LW f32 values (lo, and for f16 hi). */
struct Load { lo: vec4f, hi: vec4f }

fn unpack(v: vec4<u32>) -> Load {
  if (F16) {
    return Load(vec4f(unpack2x16float(v.x), unpack2x16float(v.y)), vec4f(unpack2x16float(v.z), unpack2x16float(v.w)));
  }
  return Load(bitcast<vec4f>(v), vec4f(0.0));
}

/** acc += p_j · v for each of the G rows, p_j the probability of the tile's key j. */
fn accumulateV(acc: ptr<function, array<vec4f, G * NA>>, v: Load, j: u32) {
#unroll r G
  { let pj = probs[r * WG + j]; (*acc)[r * NA] += pj * v.lo;
#if F16
    (*acc)[r * NA + 1u] += pj * v.hi;
#endif
  }
#endunroll
}

#if FUSE
const HALF = u32(HD) / 2u;
var<workgroup> normed: array<f32, (G + 1u) * u32(HD)>;  // the G q rows normed (not yet rotated), then the k row

/** Element d of normed row r rotated to position pos: the pair (i, i + HD/2) as rope.wgsl turns it. */
fn rotated(r: u32, d: u32, pos: u32) -> f32 {
  let i = d % HALF;
  let a = normed[r * u32(HD) + i];
  let b = normed[r * u32(HD) + i + HALF];
  let at = pos * HALF + i;
  let c = cosT[at];
  let s = sinT[at];
  return select(b * c + a * s, a * c - b * s, d < HALF);
}

/** 16 bytes of the cache from 4 (f32) or 8 (f16, rounded to nearest like CT(x)) values, as the cache stores them. */
fn packLoad(x: array<f32, 8>) -> vec4<u32> {
  if (F16) {
    return vec4<u32>(pack2x16float(vec2f(x[0], x[1])), pack2x16float(vec2f(x[2], x[3])),
                     pack2x16float(vec2f(x[4], x[5])), pack2x16float(vec2f(x[6], x[7])));
  }
  return bitcast<vec4<u32>>(vec4f(x[0], x[1], x[2], x[3]));
}

/** qs ← rope(q_norm(q)) of the workgroup's G rows; where `owner` (this split holds pos), the kv head's
 *  rope(k_norm(k)) and v go to the token's slot, visible to the workgroup's reads after the storage barrier. */
fn normRopeWrite(t: u32, pos: u32, kvh: u32, row0: u32, pages: u32, owner: bool, tid: u32) {
  let kRow = (t * p.nKv + kvh) * u32(HD);
  // Sums of squares: q rows through red, the k row through probs (both free until the key loop).
  var ss: array<f32, G + 1u>;
#unroll r G + 1
  ss[r] = 0.0;
#endunroll
  for (var i = tid; i < u32(HD); i += WG) {
#unroll r G
    { let x = q[(row0 + r) * u32(HD) + i]; ss[r] += x * x; }
#endunroll
    if (owner) {
      let x = kIn[kRow + i];
      ss[G] += x * x;
    }
  }
#unroll r G
  red[r * WG + tid] = ss[r];
#endunroll
  probs[tid] = ss[G];
  workgroupBarrier();
  for (var st = WG / 2u; st > 0u; st >>= 1u) {
    if (tid < st) {
#unroll r G
      red[r * WG + tid] += red[r * WG + tid + st];
#endunroll
      probs[tid] += probs[tid + st];
    }
    workgroupBarrier();
  }
  for (var i = tid; i < u32(HD); i += WG) {
#unroll r G
    normed[r * u32(HD) + i] = qkw[i] * (q[(row0 + r) * u32(HD) + i] * inverseSqrt(red[r * WG] / f32(HD) + p.eps));
#endunroll
    if (owner) {
      let rs = inverseSqrt(probs[0] / f32(HD) + p.eps);
      normed[G * u32(HD) + i] = qkw[u32(HD) + i] * (kIn[kRow + i] * rs);
    }
  }
  workgroupBarrier();
  for (var i = tid; i < G * QV; i += WG) {
    let r = i / QV;
    let d = 4u * (i % QV);
    qs[i] = vec4f(rotated(r, d, pos), rotated(r, d + 1u, pos), rotated(r, d + 2u, pos), rotated(r, d + 3u, pos));
  }
  if (owner) {
    let slot = pageTable[pages + pos / p.pageSize] * p.pageSize + pos % p.pageSize;
    let base = (slot * p.nKv + kvh) * LPR;
    for (var c = tid; c < LPR; c += WG) {
      var kx: array<f32, 8>;
      var vx: array<f32, 8>;
      for (var e = 0u; e < LW; e++) {
        kx[e] = rotated(G, c * LW + e, pos);
        vx[e] = vIn[kRow + c * LW + e];
      }
      kc[base + c] = packLoad(kx);
      vc[base + c] = packLoad(vx);
    }
  }
  storageBarrier();
}
#endif

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) tid: u32) {
  let split = wid.x;
  let kvh = wid.y;
  let seq = wid.z;
#if FUSE
  let t = seq;
#else
  let t = qStarts[seq];
#endif
  let pos = qPositions[t];
  let row0 = t * p.nHeads + kvh * G;   // first of the G query rows
  let begin = split * p.chunk;
  let end = max(begin, min(pos + 1u, begin + p.chunk));
  let pages = seq * p.maxPages;
#if FUSE
  normRopeWrite(t, pos, kvh, row0, pages, pos >= begin && pos < begin + p.chunk, tid);
#else
  for (var i = tid; i < G * QV; i += WG) {
    let b = (row0 + i / QV) * u32(HD) + 4u * (i % QV);
    qs[i] = vec4f(q[b], q[b + 1u], q[b + 2u], q[b + 3u]);
  }
#endif
  let lane = tid % LPR;
  let kg = tid / LPR;
  var m: array<f32, G>;
  var l: array<f32, G>;
  var acc: array<vec4f, G * NA>;
#unroll r G
  m[r] = -1.0e30; l[r] = 0.0;
#endunroll
#unroll a G * (1 + F16)
  acc[a] = vec4f(0.0);
#endunroll
  workgroupBarrier();
  for (var kb = begin; kb < end; kb += WG) {
    let key = kb + tid;
    var s: array<f32, G>;
#unroll r G
    s[r] = MASKED;
#endunroll
    if (key < end) {
      let slot = pageTable[pages + key / p.pageSize] * p.pageSize + key % p.pageSize;
      slots[tid] = slot;
      let base = (slot * p.nKv + kvh) * LPR;
      var dots: array<f32, G>;
#unroll r G
      dots[r] = 0.0;
#endunroll
      // The row's LPR = HD / LW loads (LW: 8 halves or 4 floats), all in flight.
#unroll c HD / (4 + 4 * F16)
      { let k = unpack(kc[base + c]);
#unroll r G
        dots[r] += dot(qs[r * QV + c * NA], k.lo);
#if F16
        dots[r] += dot(qs[r * QV + c * NA + 1u], k.hi);
#endif
#endunroll
      }
#endunroll
#unroll r G
      s[r] = dots[r] * p.scale2;
#endunroll
    }
#unroll r G
    red[r * WG + tid] = s[r];
#endunroll
    workgroupBarrier();
    for (var st = WG / 2u; st > 0u; st >>= 1u) {
      if (tid < st) {
#unroll r G
        red[r * WG + tid] = max(red[r * WG + tid], red[r * WG + tid + st]);
#endunroll
      }
      workgroupBarrier();
    }
#unroll r G
    { let mt = max(m[r], red[r * WG]); let alpha = exp2(m[r] - mt); let pr = exp2(s[r] - mt); m[r] = mt;
      l[r] = l[r] * alpha + pr; probs[r * WG + tid] = pr; acc[r * NA] *= alpha;
#if F16
      acc[r * NA + 1u] *= alpha;
#endif
    }
#endunroll
    workgroupBarrier();
    // A thread's V rows VU keys at a time, their loads issued together (one at a time, each waited for, this loop
    // was most of a batch-1 step's attention time); accumulated in key order as before.
    let n = min(WG, end - kb);
    var j = kg;
    for (; j + (VU - 1u) * KG < n; j += VU * KG) {
      var vs: array<Load, VU>;
#unroll u 8
      vs[u] = unpack(vc[(slots[j + u * KG] * p.nKv + kvh) * LPR + lane]);
#endunroll
#unroll u 8
      accumulateV(&acc, vs[u], j + u * KG);
#endunroll
    }
    for (; j < n; j += KG) { accumulateV(&acc, unpack(vc[(slots[j] * p.nKv + kvh) * LPR + lane]), j); }
    workgroupBarrier();
  }
  // l: the sum of every thread's own share; o: the sum over key groups. Rows one at a time through red / merged.
#unroll r G
  {
    red[tid] = l[r];
#unroll a 1 + F16
    { let d = lane * LW + 4u * a; let v = acc[r * NA + a];
      merged[kg * u32(HD) + d] = v.x; merged[kg * u32(HD) + d + 1u] = v.y; merged[kg * u32(HD) + d + 2u] = v.z; merged[kg * u32(HD) + d + 3u] = v.w; }
#endunroll
    workgroupBarrier();
    for (var st = WG / 2u; st > 0u; st >>= 1u) {
      if (tid < st) { red[tid] += red[tid + st]; }
      workgroupBarrier();
    }
    let lt = red[0];
    if (tid < u32(HD)) {
      var o = 0.0;
#unroll g 128 / (HD / (4 + 4 * F16))
      o += merged[g * u32(HD) + tid];
#endunroll
      var inv = 1.0;
      if (p.splits == 1u) { inv = 1.0 / lt; }
      out[(split * p.Tq * p.nHeads + row0 + r) * u32(HD) + tid] = o * inv;
    }
    if (tid == 0u && p.splits > 1u) { partML[split * p.Tq * p.nHeads + row0 + r] = vec2f(m[r], lt); }
    workgroupBarrier();
  }
#endunroll
}

#if SG
// Version 3, entry `main_sg` (SG; needs `subgroups`): same bindings, parameters and outputs; runs when asked
// (TROUPE_ATTENTION_DECODE=3): on the H200 it read the KV cache at 0.71x version 2's rate (2026-12-02). Version 2 reads a K row per thread (rows 2 KB apart in a warp) and takes about 10
// barriers per 128 keys for the tile's softmax. Here a group of L neighbouring lanes of a subgroup takes one key at
// a time: each lane reads its 16-byte pieces of the K and V rows (so L lanes read the row's contiguous bytes), the
// score is its partial dots summed over the L lanes by subgroupShuffleXor, and each group keeps its own running
// max, sum and output (online softmax), so the key loop has no barrier at all. The WG / L groups of a workgroup
// stride over the split's keys, U keys at a time (their loads in flight together), and are merged at the end.
// Threads fill subgroups in invocation order (local index L·g .. L·g + L − 1 is one group), as on every Vulkan
// driver. L: lanes per key, a power of two dividing LPR and at most the subgroup size.
const NL = LPR / L;               // loads per lane per row
const NG = WG / L;                // key groups
const U = 4u;                     // keys a group takes at a time

var<workgroup> groupML: array<vec2f, NG * G>;       // (max, sum) of each group and head
var<workgroup> groupO: array<f32, NG * u32(HD)>;    // one head's outputs of every group

fn group_sum(x: f32) -> f32 {
  var s = x;
  for (var o = L / 2u; o > 0u; o >>= 1u) { s += subgroupShuffleXor(s, o); }
  return s;
}

@compute @workgroup_size(WG)
fn main_sg(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) tid: u32) {
  let split = wid.x;
  let kvh = wid.y;
  let seq = wid.z;
  let t = qStarts[seq];
  let pos = qPositions[t];
  let row0 = t * p.nHeads + kvh * G;   // first of the G query rows
  let g = tid / L;
  let lane = tid % L;
  // This lane's pieces of each query row: loads lane, lane + L, …
  var qr: array<vec4f, G * NL * NA>;
  for (var r = 0u; r < G; r++) {
    for (var c = 0u; c < NL; c++) {
      for (var a = 0u; a < NA; a++) {
        let b = (row0 + r) * u32(HD) + (lane + c * L) * LW + 4u * a;
        qr[(r * NL + c) * NA + a] = vec4f(q[b], q[b + 1u], q[b + 2u], q[b + 3u]);
      }
    }
  }
  let begin = split * p.chunk;
  let end = max(begin, min(pos + 1u, begin + p.chunk));
  let pages = seq * p.maxPages;
  var m: array<f32, G>;
  var l: array<f32, G>;
  var acc: array<vec4f, G * NL * NA>;
  for (var r = 0u; r < G; r++) { m[r] = -1.0e30; l[r] = 0.0; }
  for (var a = 0u; a < G * NL * NA; a++) { acc[a] = vec4f(0.0); }
  // U keys a group at a time (their loads in flight together), strided by NG so that a warp's groups read
  // neighbouring keys. The bound is the workgroup's, so every lane of a subgroup takes every shuffle; keys past
  // the end re-read the last key and get probability 0.
  for (var kb = begin; kb < end; kb += NG * U) {
    var vv: array<Load, U * NL>;
    var s: array<f32, U * G>;
    for (var u = 0u; u < U; u++) {
      let want = kb + g + u * NG;
      let key = min(want, end - 1u);
      let slot = pageTable[pages + key / p.pageSize] * p.pageSize + key % p.pageSize;
      let base = (slot * p.nKv + kvh) * LPR + lane;
      var dots: array<f32, G>;
      for (var r = 0u; r < G; r++) { dots[r] = 0.0; }
      for (var c = 0u; c < NL; c++) {
        let k = unpack(kc[base + c * L]);
        vv[u * NL + c] = unpack(vc[base + c * L]);
        for (var r = 0u; r < G; r++) {
          dots[r] += dot(qr[(r * NL + c) * NA], k.lo);
          if (F16) { dots[r] += dot(qr[(r * NL + c) * NA + 1u], k.hi); }
        }
      }
      for (var r = 0u; r < G; r++) { s[u * G + r] = select(MASKED, group_sum(dots[r]) * p.scale2, want < end); }
    }
    for (var r = 0u; r < G; r++) {
      var mt = m[r];
      for (var u = 0u; u < U; u++) { mt = max(mt, s[u * G + r]); }
      let alpha = exp2(m[r] - mt);
      m[r] = mt;
      l[r] *= alpha;
      for (var a = 0u; a < NL * NA; a++) { acc[r * NL * NA + a] *= alpha; }
      for (var u = 0u; u < U; u++) {
        let pr = exp2(s[u * G + r] - mt);
        l[r] += pr;
        for (var c = 0u; c < NL; c++) {
          let v = vv[u * NL + c];
          acc[(r * NL + c) * NA] += pr * v.lo;
          if (F16) { acc[(r * NL + c) * NA + 1u] += pr * v.hi; }
        }
      }
    }
  }
  // Merge the groups: o = Σ_g 2^(m_g − M) o_g, sum likewise, with M the largest m_g; one head at a time.
  if (lane == 0u) {
    for (var r = 0u; r < G; r++) { groupML[g * G + r] = vec2f(m[r], l[r]); }
  }
  for (var r = 0u; r < G; r++) {
    for (var c = 0u; c < NL; c++) {
      for (var a = 0u; a < NA; a++) {
        let v = acc[(r * NL + c) * NA + a];
        let d = g * u32(HD) + (lane + c * L) * LW + 4u * a;
        groupO[d] = v.x;
        groupO[d + 1u] = v.y;
        groupO[d + 2u] = v.z;
        groupO[d + 3u] = v.w;
      }
    }
    workgroupBarrier();
    var mMax = -1.0e30;
    for (var h = 0u; h < NG; h++) { mMax = max(mMax, groupML[h * G + r].x); }
    if (tid < u32(HD)) {
      var o = 0.0;
      var sum = 0.0;
      for (var h = 0u; h < NG; h++) {
        let w = exp2(groupML[h * G + r].x - mMax);
        o += w * groupO[h * u32(HD) + tid];
        sum += w * groupML[h * G + r].y;
      }
      var inv = 1.0;
      if (p.splits == 1u) { inv = 1.0 / sum; }
      out[(split * p.Tq * p.nHeads + row0 + r) * u32(HD) + tid] = o * inv;
      if (tid == 0u && p.splits > 1u) { partML[split * p.Tq * p.nHeads + row0 + r] = vec2f(mMax, sum); }
    }
    workgroupBarrier();
  }
}
#endif
