// y = x·Wᵀ on tensor cores, version 2 of shaders/matmul_tc.wgsl: the workgroup copies each KT-deep slice
// of its x rows and W rows into workgroup memory once (vec4 loads), and its 2 x 2 subgroups load their
// fragments from there, so each global element is read once per workgroup instead of once per
// subgroup. Same layouts, variant consts and whole-tile rule as version 1, with K % KT == 0.
struct Params { M: u32, N: u32, K: u32, _p: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<vec4<f16>>;
@group(0) @binding(2) var<storage, read> w: array<vec4<f16>>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;

alias Left = subgroup_matrix_left<f16, SK, SM>;
alias Right = subgroup_matrix_right<f16, SN, SK>;
alias Acc = subgroup_matrix_result<f32, SN, SM>;

const KT = 32u;
const R = 2u * TM * SM;  // rows of y per workgroup
const C = 2u * TN * SN;  // columns of y per workgroup
var<workgroup> xs: array<f16, R * KT>;
var<workgroup> ws: array<f16, C * KT>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(subgroup_id) sid: u32, @builtin(local_invocation_index) lid: u32) {
  let rowW = wid.y * R;
  let colW = wid.x * C;
  let r0 = (sid / 2u) * TM * SM;
  let c0 = (sid % 2u) * TN * SN;
  let k4 = p.K / 4u;
  var acc: array<array<Acc, TN>, TM>;
  for (var i = 0u; i < TM; i++) {
    for (var j = 0u; j < TN; j++) { acc[i][j] = Acc(); }
  }
  for (var k = 0u; k < p.K; k += KT) {
    for (var e = lid; e < R * KT / 4u; e += u32(WG)) {
      let r = e / (KT / 4u);
      let q = e % (KT / 4u);
      let v = x[(rowW + r) * k4 + k / 4u + q];
      for (var t = 0u; t < 4u; t++) { xs[r * KT + q * 4u + t] = v[t]; }
    }
    for (var e = lid; e < C * KT / 4u; e += u32(WG)) {
      let c = e / (KT / 4u);
      let q = e % (KT / 4u);
      let v = w[(colW + c) * k4 + k / 4u + q];
      for (var t = 0u; t < 4u; t++) { ws[c * KT + q * 4u + t] = v[t]; }
    }
    workgroupBarrier();
    for (var kk = 0u; kk < KT; kk += SK) {
      var a: array<Left, TM>;
      for (var i = 0u; i < TM; i++) { a[i] = subgroupMatrixLoad<Left>(&xs, (r0 + i * SM) * KT + kk, false, KT); }
      for (var j = 0u; j < TN; j++) {
        let b = subgroupMatrixLoad<Right>(&ws, (c0 + j * SN) * KT + kk, true, KT);
        for (var i = 0u; i < TM; i++) { acc[i][j] = subgroupMatrixMultiplyAccumulate(a[i], b, acc[i][j]); }
      }
    }
    workgroupBarrier();
  }
  for (var i = 0u; i < TM; i++) {
    for (var j = 0u; j < TN; j++) {
      subgroupMatrixStore(&y, (rowW + r0 + i * SM) * p.N + colW + c0 + j * SN, acc[i][j], false, p.N);
    }
  }
}
