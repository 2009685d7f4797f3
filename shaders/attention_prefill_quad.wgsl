// Causal attention over packed sequences, version 2 of attention_prefill.wgsl (needs `subgroups`): same
// bindings' meaning, parameters and outputs (o and the row log-sum-exp). It is the dq kernel of
// attention_backward_quad.wgsl with an online softmax in place of the saved statistics: a quad of four threads
// shares one flat query row (token, head of the GQA group), each thread holding a quarter of the head dims
// (vec4 slots slice, slice + 4, …) of q and of the output in registers; a score is four partial dots summed over
// the quad (quadSwapX/Y). Keys stream through workgroup memory in tiles of KT: one barrier pair a tile, the
// tile's scores kept in registers so that the output is rescaled once a tile. Version 1 (attention_prefill.wgsl)
// passes scores and probabilities through workgroup memory with four barriers a 32-key tile.
// Threads fill subgroups in invocation order (local index 4i..4i+3 is one quad), as on every Vulkan driver.
// Variant const: HD (a multiple of 16).
struct Params { T: u32, nHeads: u32, nKv: u32, group: u32, numSeqs: u32, scale2: f32, _p0: u32, _p1: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<vec4f>;
@group(0) @binding(2) var<storage, read> k: array<vec4f>;
@group(0) @binding(3) var<storage, read> v: array<vec4f>;
@group(0) @binding(4) var<storage, read> seqStarts: array<u32>;
@group(0) @binding(5) var<storage, read_write> o: array<vec4f>;
@group(0) @binding(6) var<storage, read_write> lse: array<f32>;

const NS = u32(HD) / 4u;    // vec4 slots of a head
const J = u32(HD) / 16u;    // slots per thread
const ROWS = 32u;           // flat query rows per workgroup (128 threads)
const KT = 16u;             // keys per tile
const MASKED = -3.0e38;     // score of a masked key (exp2 of it minus any max is 0)

var<workgroup> kTile: array<vec4f, KT * NS>;
var<workgroup> vTile: array<vec4f, KT * NS>;
var<workgroup> keyRange: vec2u;

fn seq_start(t: u32) -> u32 {
  var lo = 0u;
  var hi = p.numSeqs;
  while (hi - lo > 1u) {
    let mid = (lo + hi) / 2u;
    if (seqStarts[mid] <= t) { lo = mid; } else { hi = mid; }
  }
  return seqStarts[lo];
}

fn quad_sum(x: f32) -> f32 {
  let y = x + quadSwapX(x);
  return y + quadSwapY(y);
}

// Slot of flat query row f (token f / group, head kvh·group + f % group); o has q's layout.
fn row_slot(f: u32, kvh: u32) -> u32 {
  return ((f / p.group) * p.nHeads + kvh * p.group + f % p.group) * NS;
}

@compute @workgroup_size(128)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32,
        @builtin(subgroup_invocation_id) lane: u32) {
  let kvh = wid.y;
  let flat0 = (nwg.x - 1u - wid.x) * ROWS;   // last rows (most keys under the causal mask) start first
  let nRows = p.T * p.group;
  let slice = lane & 3u;
  // Rows past the end compute row nRows − 1 again (every lane must take every quad swap) and store nothing.
  let f = min(flat0 + tid / 4u, nRows - 1u);
  let t = f / p.group;
  let start = seq_start(t);
  let rbase = row_slot(f, kvh) + slice;
  var qr: array<vec4f, J>;
  var acc: array<vec4f, J>;
  for (var j = 0u; j < J; j++) { qr[j] = q[rbase + 4u * j]; }
  if (tid == 0u) {
    // Keys from the start of the first row's sequence to the last row's token (rows are in token order).
    let last = min(flat0 + ROWS, nRows) - 1u;
    keyRange = vec2u(seq_start(flat0 / p.group), last / p.group + 1u);
  }
  let range = workgroupUniformLoad(&keyRange);
  var m = -1.0e30;
  var l = 0.0;
  for (var kb = range.x; kb < range.y; kb += KT) {
    for (var i = tid; i < KT * NS; i += 128u) {
      let key = kb + i / NS;
      var kk = vec4f(0.0);
      var vv = vec4f(0.0);
      if (key < range.y) {
        let b = (key * p.nKv + kvh) * NS + i % NS;
        kk = k[b];
        vv = v[b];
      }
      kTile[i] = kk;
      vTile[i] = vv;
    }
    workgroupBarrier();
    var sc: array<f32, KT>;
    var mt = m;
    for (var c = 0u; c < KT; c++) {
      let a = c * NS + slice;
      var s = 0.0;
      for (var j = 0u; j < J; j++) { s += dot(qr[j], kTile[a + 4u * j]); }
      s = quad_sum(s);
      let key = kb + c;
      sc[c] = select(MASKED, s * p.scale2, key >= start && key <= t);
      mt = max(mt, sc[c]);
    }
    let alpha = exp2(m - mt);
    m = mt;
    l *= alpha;
    for (var j = 0u; j < J; j++) { acc[j] *= alpha; }
    for (var c = 0u; c < KT; c++) {
      let pr = exp2(sc[c] - m);
      l += pr;
      let a = c * NS + slice;
      for (var j = 0u; j < J; j++) { acc[j] += pr * vTile[a + 4u * j]; }
    }
    workgroupBarrier();
  }
  if (flat0 + tid / 4u < nRows) {
    // Every row sees its own token, so l >= 1 here.
    let inv = 1.0 / l;
    for (var j = 0u; j < J; j++) { o[rbase + 4u * j] = acc[j] * inv; }
    if (slice == 0u) { lse[rbase / NS] = (m + log2(l)) * 0.6931471805599453; }
  }
}
