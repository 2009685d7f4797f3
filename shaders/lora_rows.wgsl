// Per-row multi-LoRA: y[t] += scale[a] · (x[t]·A[a]ᵀ)·B[a]ᵀ with a the adapter of row t (rows of no adapter untouched).
// A bank holds n adapters side by side, transposed so that neighbouring threads read neighbouring words:
// adapter a's Aᵀ [IN, R] at a·IN·R (column j < rank[a] is A's row j) and Bᵀ [R, OUT] at a·R·OUT (row j < rank[a]
// is B's column j); R is the bank's largest rank, entries past an adapter's rank are never read (src/model/lora-bank.ts
// fills slots with transpose.wgsl). rank[a] = 0: the adapter does not have this module (contributes nothing).
// Rows come in tiles of up to 16 rows of one adapter (built on the host once per batch, src/kernels/lora-rows.ts):
// tiles[i · 18] = slot, then the count of rows, then the row indices. A workgroup serves a whole tile, so each
// adapter weight it reads serves 16 rows; one workgroup per row re-read the adapter from L2 for every row (down_proj's
// Aᵀ is 384 KB), which made the bank cost more than the base matmuls in rollouts.
// TX is x's storage type, TW the bank's (f32, or f16 when shader-f16); math, u and y are f32.
// Tiles fold into (y, z) of the grid: tile = wg.y + wg.z · nwg.y. shrink splits IN into p.splits parts of p.chunk
// (a multiple of SHRINK_K; few tiles then still fill the GPU), each writing its partial u, which expand sums.
struct Params { T: u32, IN: u32, OUT: u32, R: u32, n: u32, splits: u32, chunk: u32, tiles: u32 }

const NO_ROW = 0xffffffffu;
const TILE_STRIDE = 18u;
/** A workgroup's threads: 64 ranks (shrink) or 64 output columns (expand), times 4 groups of 4 rows of the tile. */
const RANKS = 64u;
const GROUPS = 4u;
/** Columns of x staged in workgroup memory at a time (one per rank thread), and ranks of u in expand. */
const SHRINK_K = 64u;
/** Output columns of an expand workgroup; its threads also stage one rank each of u, so it equals RANKS. */
const EXPAND_COLS = 64u;
/** Weight loads a thread issues together before using them (RANKS and SHRINK_K are multiples). */
const LOADS = 16u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<TX>;
@group(0) @binding(2) var<storage, read> A: array<TW>;
@group(0) @binding(3) var<storage, read> B: array<TW>;
@group(0) @binding(4) var<storage, read> scale: array<f32>;
@group(0) @binding(5) var<storage, read> rank: array<u32>;
@group(0) @binding(6) var<storage, read> tiles: array<u32>;
@group(0) @binding(7) var<storage, read_write> u: array<f32>;         // [splits, T, R]
@group(0) @binding(8) var<storage, read_write> y: array<f32>;

/** The rank of slot a here (0: no such module; a slot past the bank also counts as none, never read out of bounds). */
fn slotRank(a: u32) -> u32 {
  if (a >= p.n) { return 0u; }
  return min(rank[a], p.R);
}

/** Row i of the tile at `base` (NO_ROW past its count). */
fn tileRow(base: u32, count: u32, i: u32) -> u32 {
  if (i >= count) { return NO_ROW; }
  return tiles[base + 2u + i];
}

/** The four rows of group g. */
fn groupRows(base: u32, count: u32, g: u32) -> vec4u {
  let i = g * 4u;
  return vec4u(tileRow(base, count, i), tileRow(base, count, i + 1u), tileRow(base, count, i + 2u), tileRow(base, count, i + 3u));
}

fn xAt(row: u32, k: u32, end: u32) -> f32 {
  if (row == NO_ROW || k >= end) { return 0.0; }
  return f32(x[row * p.IN + k]);
}

/** [k][group]: x of the group's 4 rows at column k of the staged block. */
var<workgroup> xs: array<vec4f, SHRINK_K * GROUPS>;

// u[split, t, j] = x[t, part]·Aᵀ[a, part, j] for each row t of the tile and j < rank: one workgroup per (tile, 64
// ranks, part of IN). Thread (j, g) keeps the 4 rows of group g in one vec4 accumulator; each Aᵀ word it loads
// (neighbouring threads, neighbouring words) feeds 4 rows, the 4 groups share it through L1. Loads go LOADS at a
// time into registers before their FMAs (constant loop bounds, indices clamped in bounds, x zero past the part):
// one load per FMA step kept a thread waiting on L2 latency 64 times a block, most of the kernel's cost in decode.
@compute @workgroup_size(RANKS * GROUPS)
fn shrink(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let tile = wg.y + wg.z * nwg.y;
  if (tile >= p.tiles) { return; }
  let base = tile * TILE_STRIDE;
  let a = tiles[base];
  let r = slotRank(a);
  let split = wg.x % p.splits;
  let jb = (wg.x / p.splits) * RANKS;
  if (jb >= r) { return; } // the whole workgroup's ranks are past this adapter's
  let j = jb + lid % RANKS;
  let g = lid / RANKS;
  let rowsG = groupRows(base, tiles[base + 1u], g);
  let start = split * p.chunk;
  let end = min(p.IN, start + p.chunk);
  let col = a * p.IN * p.R + min(j, p.R - 1u);
  let kk = lid % SHRINK_K;
  var acc = vec4f(0.0);
  for (var k0 = start; k0 < end; k0 += SHRINK_K) {
    let k = k0 + kk;
    xs[kk * GROUPS + g] = vec4f(xAt(rowsG.x, k, end), xAt(rowsG.y, k, end), xAt(rowsG.z, k, end), xAt(rowsG.w, k, end));
    workgroupBarrier();
    for (var i0 = 0u; i0 < SHRINK_K; i0 += LOADS) {
      var av: array<f32, LOADS>;
      for (var q = 0u; q < LOADS; q++) { av[q] = f32(A[col + min(k0 + i0 + q, end - 1u) * p.R]); }
      for (var q = 0u; q < LOADS; q++) { acc += xs[(i0 + q) * GROUPS + g] * av[q]; }
    }
    workgroupBarrier();
  }
  if (j >= r) { return; }
  let at = split * p.T;
  if (rowsG.x != NO_ROW) { u[(at + rowsG.x) * p.R + j] = acc.x; }
  if (rowsG.y != NO_ROW) { u[(at + rowsG.y) * p.R + j] = acc.y; }
  if (rowsG.z != NO_ROW) { u[(at + rowsG.z) * p.R + j] = acc.z; }
  if (rowsG.w != NO_ROW) { u[(at + rowsG.w) * p.R + j] = acc.w; }
}

/** Σ_split u of the 4 rows at rank j (j < R), 4 parts at a time (16 loads in flight). A missing row (NO_ROW) reads row
 * 0 instead: its lane is never written out. */
fn uSum4(rows: vec4u, j: u32) -> vec4f {
  let rs = select(rows, vec4u(0u), rows == vec4u(NO_ROW));
  var s = vec4f(0.0);
  for (var sp0 = 0u; sp0 < p.splits; sp0 += 4u) {
    for (var q = 0u; q < 4u; q++) {
      let at = min(sp0 + q, p.splits - 1u) * p.T;
      let v = vec4f(u[(at + rs.x) * p.R + j], u[(at + rs.y) * p.R + j], u[(at + rs.z) * p.R + j], u[(at + rs.w) * p.R + j]);
      s += select(vec4f(0.0), v, sp0 + q < p.splits);
    }
  }
  return s;
}

fn addRow(row: u32, o: u32, v: f32) {
  if (row != NO_ROW) { y[row * p.OUT + o] += v; }
}

/** [j][group]: Σ_split u of the group's 4 rows at rank j of the staged block (0 past the adapter's rank). */
var<workgroup> us: array<vec4f, RANKS * GROUPS>;

// y[t, o] += scale[a] · (Σ_split u[split, t])·Bᵀ[a, :, o] for the tile's 16 rows: 64 output columns a workgroup,
// thread (c, g) one column and the 4 rows of group g in one vec4 accumulator (the layout of shrink: each Bᵀ word
// feeds 4 rows, the 4 groups share it through L1). 64 columns a workgroup rather than 256 gives 4x the workgroups
// and a quarter of the FMA chain per thread: in decode (12 tiles x 1024 columns) 256 columns left 48 workgroups on
// 132 SMs. The parts of u are summed once per workgroup, 64 ranks at a time, into workgroup memory (thread (c, g)
// stages rank c of group g). Bᵀ loads go LOADS at a time, as in shrink (ranks past the adapter's and columns past
// OUT read clamped indices; their u is 0 or their y unwritten).
@compute @workgroup_size(EXPAND_COLS * GROUPS)
fn expand(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let tile = wg.y + wg.z * nwg.y;
  if (tile >= p.tiles) { return; }
  let base = tile * TILE_STRIDE;
  let a = tiles[base];
  let r = slotRank(a);
  if (r == 0u) { return; }
  let c = lid % EXPAND_COLS;
  let g = lid / EXPAND_COLS;
  let o = wg.x * EXPAND_COLS + c;
  let col = a * p.R * p.OUT + min(o, p.OUT - 1u);
  let rowsG = groupRows(base, tiles[base + 1u], g);
  var acc = vec4f(0.0);
  for (var jb = 0u; jb < r; jb += RANKS) {
    let j = jb + c;
    us[c * GROUPS + g] = select(vec4f(0.0), uSum4(rowsG, min(j, p.R - 1u)), j < r);
    workgroupBarrier();
    for (var i0 = 0u; i0 < RANKS; i0 += LOADS) {
      var bv: array<f32, LOADS>;
      for (var q = 0u; q < LOADS; q++) { bv[q] = f32(B[col + min(jb + i0 + q, r - 1u) * p.OUT]); }
      for (var q = 0u; q < LOADS; q++) { acc += us[(i0 + q) * GROUPS + g] * bv[q]; }
    }
    workgroupBarrier();
  }
  if (o >= p.OUT) { return; }
  let v = acc * scale[a];
  addRow(rowsG.x, o, v.x);
  addRow(rowsG.y, o, v.y);
  addRow(rowsG.z, o, v.z);
  addRow(rowsG.w, o, v.w);
}
