// Power-of-two scales that bring each row's largest |entry| into [2^14, 2^15): what an f32 operand of the
// tensor-core matmul (shaders/matmul_tc_tiled.wgsl) is multiplied by before its f16 conversion, so that
// neither large activations overflow f16 nor small gradients flush to zero. Exact powers of two: dividing
// them back out loses nothing. A row of zeros, or one holding inf/NaN, gets scale 1 (the non-finite value
// then reaches the product as it would in f32).
//   rows: x [R, L] row-major, one workgroup per row (rows past 65535 spill into the grid's y dimension).
//   cols: x [L, R] (row i is column i), one thread per row reading down its column: coalesced across threads.
//   rows_f16: as rows, and writes x·scale as f16 into xh [RP, L] (L even, two halves a word), rows R..RP-1 zeros
//     with scale 1: the operand of shaders/matmul_tc_direct.wgsl, padded to whole tiles. pack2x16float keeps
//     the scaled values (below 2^15) exact to f16 rounding; a row holding inf/NaN has no defined f16 image.
//   rows_f16_norm: as rows_f16 for y = rmsnorm(x)·norm (rmsnorm.wgsl's forward: y = norm·(x·rsqrt(mean(x²) + eps)),
//     eps in the fourth word), which it also writes as f32 into y [R, L]: the norm before q/k/v or gate/up and their
//     tensor cores' cast in one pass instead of two (the f32 y serves adapters, and names the rows cast).
//   rows_f16_glu: as rows_f16 for y = silu(x)·up (swiglu.wgsl's forward, x the gate), which it also writes as f32 into
//     y [R, L]: SwiGLU and the cast of its output for down_proj's tensor cores in one pass instead of two.
// The row entries run 256 threads a row: at a rollout's 256 rows, 64 left most of the GPU's threads idle.
struct Params { R: u32, L: u32, RP: u32, eps: f32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> scale: array<f32>;
@group(0) @binding(3) var<storage, read_write> xh: array<u32>;
@group(0) @binding(4) var<storage, read> aux: array<f32>;         // the norm [L] (rows_f16_norm), up [R, L] (rows_f16_glu)
@group(0) @binding(5) var<storage, read_write> y: array<f32>;     // [R, L] (rows_f16_norm, rows_f16_glu)

const TARGET_EXP = 15;

fn scaleFor(m: f32) -> f32 {
  // m = f·2^e with f in [0.5, 1): m·2^(15-e) lies in [2^14, 2^15). m != m is NaN; m above the largest f32 is inf.
  if (m == 0.0 || m != m || m > 0x1.fffffep+127f) { return 1.0; }
  let e = frexp(m).exp;
  return exp2(f32(clamp(TARGET_EXP - e, -126, 126)));
}

const WG = 256u;  // threads of a row entry
var<workgroup> part: array<f32, WG>;

// The sum (max) over the workgroup of each thread's v, read by all threads; part is free again on return.
fn workgroupReduce(v: f32, tid: u32, isMax: bool) -> f32 {
  part[tid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (tid < s) { part[tid] = select(part[tid] + part[tid + s], max(part[tid], part[tid + s]), isMax); }
    workgroupBarrier();
  }
  let total = part[0];
  workgroupBarrier();
  return total;
}

@compute @workgroup_size(WG)
fn rows(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let row = wg.x + wg.y * nwg.x;
  if (row >= p.R) { return; }  // the whole workgroup leaves together: barriers stay uniform
  var m = 0.0;
  for (var l = tid; l < p.L; l += WG) { m = max(m, abs(x[row * p.L + l])); }
  let sc = scaleFor(workgroupReduce(m, tid, true));
  if (tid == 0u) { scale[row] = sc; }
}

@compute @workgroup_size(64)
fn cols(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * 64u;
  if (i >= p.R) { return; }
  var m = 0.0;
  for (var l = 0u; l < p.L; l++) { m = max(m, abs(x[l * p.R + i])); }
  scale[i] = scaleFor(m);
}

@compute @workgroup_size(WG)
fn rows_f16(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let row = wg.x + wg.y * nwg.x;
  if (row >= p.RP) { return; }  // the whole workgroup leaves together: barriers stay uniform
  let real = row < p.R;
  var m = 0.0;
  if (real) { for (var l = tid; l < p.L; l += WG) { m = max(m, abs(x[row * p.L + l])); } }
  let sc = scaleFor(workgroupReduce(m, tid, true));
  if (tid == 0u) { scale[row] = sc; }
  let words = p.L / 2u;
  for (var i = tid; i < words; i += WG) {
    var v = vec2f(0.0);
    if (real) { v = vec2f(x[row * p.L + 2u * i], x[row * p.L + 2u * i + 1u]) * sc; }
    xh[row * words + i] = pack2x16float(v);
  }
}

// The end of rows_f16_norm and rows_f16_glu: the row's scale from its largest |entry| (m: this thread's share of it)
// and the y the workgroup just wrote, times that scale, as f16 (read back, so the f16 rows are y's exactly); a
// padding row gets scale 1 and zeros. Called by the whole workgroup.
fn castY(row: u32, m: f32, tid: u32) {
  storageBarrier();  // every thread's stores to y are visible to the whole workgroup
  let sc = scaleFor(workgroupReduce(m, tid, true));
  if (tid == 0u) { scale[row] = sc; }
  let words = p.L / 2u;
  for (var i = tid; i < words; i += WG) {
    var v = vec2f(0.0);
    if (row < p.R) {
      let l = row * p.L + 2u * i;
      v = vec2f(y[l], y[l + 1u]) * sc;
    }
    xh[row * words + i] = pack2x16float(v);
  }
}

@compute @workgroup_size(WG)
fn rows_f16_norm(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let row = wg.x + wg.y * nwg.x;
  if (row >= p.RP) { return; }  // the whole workgroup leaves together: barriers stay uniform
  let real = row < p.R;
  let base = row * p.L;
  var ss = 0.0;
  if (real) { for (var l = tid; l < p.L; l += WG) { let v = x[base + l]; ss += v * v; } }
  let r = inverseSqrt(workgroupReduce(ss, tid, false) / f32(p.L) + p.eps);
  var m = 0.0;
  if (real) {
    for (var l = tid; l < p.L; l += WG) {
      let v = aux[l] * (x[base + l] * r);
      y[base + l] = v;
      m = max(m, abs(v));
    }
  }
  castY(row, m, tid);
}

// silu(g)·up with swiglu.wgsl's expression, so that y is its h bit for bit.
fn glu(g: f32, u: f32) -> f32 { return g * (1.0 / (1.0 + exp(min(-g, 80.0)))) * u; }

@compute @workgroup_size(WG)
fn rows_f16_glu(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let row = wg.x + wg.y * nwg.x;
  if (row >= p.RP) { return; }  // the whole workgroup leaves together: barriers stay uniform
  let base = row * p.L;
  var m = 0.0;
  if (row < p.R) {
    for (var l = tid; l < p.L; l += WG) {
      let v = glu(x[base + l], aux[base + l]);
      y[base + l] = v;
      m = max(m, abs(v));
    }
  }
  castY(row, m, tid);
}
