// Per-row multi-LoRA: y[t] += scale[a] · (x[t]·A[a]ᵀ)·B[a]ᵀ with a = rows[t] (NO_ADAPTER: row untouched).
// A bank holds n adapters side by side, adapter a in slot a: A at a·R·IN as [rank[a], IN] and B at
// a·OUT·R as [OUT, rank[a]] (each adapter's tensors copied in as they are; R is the bank's largest rank).
// rank[a] = 0: the adapter does not have this module (contributes nothing).
// TX is x's storage type, TW the bank's (f32, or f16 when shader-f16); math, u and y are f32.
// Rows t fold into (y, z) of the grid: t = wg.y + wg.z · nwg.y.
struct Params { T: u32, IN: u32, OUT: u32, R: u32, n: u32, _p0: u32, _p1: u32, _p2: u32 }

const NO_ADAPTER = 0xffffffffu;
const SHRINK_LANES = 64u;
const EXPAND_COLS = 256u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<TX>;
@group(0) @binding(2) var<storage, read> A: array<TW>;
@group(0) @binding(3) var<storage, read> B: array<TW>;
@group(0) @binding(4) var<storage, read> scale: array<f32>;
@group(0) @binding(5) var<storage, read> rank: array<u32>;
@group(0) @binding(6) var<storage, read> rows: array<u32>;
@group(0) @binding(7) var<storage, read_write> u: array<f32>;
@group(0) @binding(8) var<storage, read_write> y: array<f32>;

/** The rank row t uses (0 for no adapter; an index past the bank also counts as none, never read out of bounds). */
fn rowRank(a: u32) -> u32 {
  if (a == NO_ADAPTER || a >= p.n) { return 0u; }
  return min(rank[a], p.R);
}

var<workgroup> partial: array<f32, SHRINK_LANES>;

// u[t, j] = x[t]·A[a, j] for j < R (0 past the adapter's rank): one workgroup per (j, t), its 64 lanes
// stride along IN (contiguous reads of x and of A's row) and sum in workgroup memory.
@compute @workgroup_size(SHRINK_LANES)
fn shrink(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) lane: u32) {
  let t = wg.y + wg.z * nwg.y;
  let j = wg.x;
  if (t >= p.T) { return; }
  let a = rows[t];
  var acc = 0.0;
  if (j < rowRank(a)) {
    let xRow = t * p.IN;
    let aRow = (a * p.R + j) * p.IN;
    for (var k = lane; k < p.IN; k += SHRINK_LANES) {
      acc += f32(x[xRow + k]) * f32(A[aRow + k]);
    }
  }
  partial[lane] = acc;
  workgroupBarrier();
  for (var s = SHRINK_LANES / 2u; s > 0u; s >>= 1u) {
    if (lane < s) { partial[lane] += partial[lane + s]; }
    workgroupBarrier();
  }
  if (lane == 0u) { u[t * p.R + j] = partial[0]; }
}

// y[t, o] += scale[a] · u[t]·B[a, o]: one thread per output column, 256 columns per workgroup.
@compute @workgroup_size(EXPAND_COLS)
fn expand(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let t = wg.y + wg.z * nwg.y;
  let o = wg.x * EXPAND_COLS + lid;
  if (t >= p.T || o >= p.OUT) { return; }
  let a = rows[t];
  let r = rowRank(a);
  if (r == 0u) { return; }
  let uRow = t * p.R;
  let bRow = a * p.OUT * p.R + o * r;
  var acc = 0.0;
  for (var j = 0u; j < r; j++) {
    acc += u[uRow + j] * f32(B[bRow + j]);
  }
  y[t * p.OUT + o] += scale[a] * acc;
}
