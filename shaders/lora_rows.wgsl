// Per-row multi-LoRA: y[t] += scale[a] · (x[t]·A[a]ᵀ)·B[a]ᵀ with a = rows[t] (NO_ADAPTER: row untouched).
// A bank holds n adapters side by side, transposed so that neighbouring threads read neighbouring words:
// adapter a's Aᵀ [IN, R] at a·IN·R (column j < rank[a] is A's row j) and Bᵀ [R, OUT] at a·R·OUT (row j < rank[a]
// is B's column j); R is the bank's largest rank, entries past an adapter's rank are never read (src/model/lora-bank.ts
// fills slots with transpose.wgsl). rank[a] = 0: the adapter does not have this module (contributes nothing).
// TX is x's storage type, TW the bank's (f32, or f16 when shader-f16); math, u and y are f32.
// Rows t fold into (y, z) of the grid: t = wg.y + wg.z · nwg.y. shrink splits IN into p.splits parts of p.chunk
// (a batch of few rows then still fills the GPU), each writing its partial u, which expand sums.
struct Params { T: u32, IN: u32, OUT: u32, R: u32, n: u32, splits: u32, chunk: u32, _p0: u32 }

const NO_ADAPTER = 0xffffffffu;
const SHRINK_RANKS = 64u;
const SHRINK_SLICES = 4u;
const EXPAND_COLS = 256u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<TX>;
@group(0) @binding(2) var<storage, read> A: array<TW>;
@group(0) @binding(3) var<storage, read> B: array<TW>;
@group(0) @binding(4) var<storage, read> scale: array<f32>;
@group(0) @binding(5) var<storage, read> rank: array<u32>;
@group(0) @binding(6) var<storage, read> rows: array<u32>;
@group(0) @binding(7) var<storage, read_write> u: array<f32>;         // [splits, T, R]
@group(0) @binding(8) var<storage, read_write> y: array<f32>;

/** The rank row t uses (0 for no adapter; an index past the bank also counts as none, never read out of bounds). */
fn rowRank(a: u32) -> u32 {
  if (a == NO_ADAPTER || a >= p.n) { return 0u; }
  return min(rank[a], p.R);
}

var<workgroup> partial: array<f32, SHRINK_RANKS * SHRINK_SLICES>;

// u[split, t, j] = x[t, part]·Aᵀ[a, part, j] for j < R (0 past the adapter's rank): one workgroup per (row t, 64 ranks,
// part of IN), 4 slices of the part summed in workgroup memory. Threads of a slice read 64 neighbouring words of Aᵀ
// and one x.
@compute @workgroup_size(SHRINK_RANKS * SHRINK_SLICES)
fn shrink(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let t = wg.y + wg.z * nwg.y;
  if (t >= p.T) { return; }
  let split = wg.x % p.splits;
  let j = (wg.x / p.splits) * SHRINK_RANKS + lid % SHRINK_RANKS;
  let slice = lid / SHRINK_RANKS;
  let a = rows[t];
  var acc = 0.0;
  if (j < rowRank(a)) {
    let xRow = t * p.IN;
    let col = a * p.IN * p.R + j;
    let end = min(p.IN, (split + 1u) * p.chunk);
    for (var k = split * p.chunk + slice; k < end; k += SHRINK_SLICES) {
      acc += f32(x[xRow + k]) * f32(A[col + k * p.R]);
    }
  }
  partial[lid] = acc;
  workgroupBarrier();
  if (slice == 0u && j < p.R) {
    u[(split * p.T + t) * p.R + j] = partial[lid] + partial[lid + SHRINK_RANKS] + partial[lid + 2u * SHRINK_RANKS] + partial[lid + 3u * SHRINK_RANKS];
  }
}

var<workgroup> uSum: array<f32, EXPAND_COLS>;

// y[t, o] += scale[a] · (Σ_split u[split, t])·Bᵀ[a, :, o]: one thread per output column, 256 columns per workgroup;
// the parts of u are summed once per workgroup (256 ranks at a time) into workgroup memory.
@compute @workgroup_size(EXPAND_COLS)
fn expand(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let t = wg.y + wg.z * nwg.y;
  if (t >= p.T) { return; }
  let a = rows[t];
  let r = rowRank(a);
  if (r == 0u) { return; }
  let o = wg.x * EXPAND_COLS + lid;
  let col = a * p.R * p.OUT + o;
  var acc = 0.0;
  for (var jb = 0u; jb < r; jb += EXPAND_COLS) {
    let j = jb + lid;
    var uj = 0.0;
    if (j < r) {
      for (var s = 0u; s < p.splits; s++) { uj += u[(s * p.T + t) * p.R + j]; }
    }
    uSum[lid] = uj;
    workgroupBarrier();
    if (o < p.OUT) {
      let n = min(EXPAND_COLS, r - jb);
      for (var i = 0u; i < n; i++) { acc += uSum[i] * f32(B[col + (jb + i) * p.OUT]); }
    }
    workgroupBarrier();
  }
  if (o < p.OUT) { y[t * p.OUT + o] += scale[a] * acc; }
}
