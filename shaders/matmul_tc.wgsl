// y = x·Wᵀ on tensor cores through subgroup matrices (chromium_experimental_subgroup_matrix):
// x [M, K] f16 row-major, W [N, K] f16 row-major (Hugging Face's layout), y [M, N] f32, with f32
// accumulation. Version 1: each subgroup loads its fragments straight from storage (L1/L2 serve the
// reuse between subgroups; no workgroup-memory staging yet) and owns a (TM·SM) x (TN·SN) tile of y;
// a workgroup is 2 x 2 subgroups. Variant consts: SM, SN, SK (the adapter's subgroup matrix config),
// TM, TN (fragments per subgroup), WG (4 x the subgroup size). The wrapper (src/kernels/matmul-tc.ts)
// only dispatches shapes that are whole tiles: M % (2·TM·SM) == 0, N % (2·TN·SN) == 0, K % SK == 0.
struct Params { M: u32, N: u32, K: u32, _p: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f16>;
@group(0) @binding(2) var<storage, read> w: array<f16>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;

alias Left = subgroup_matrix_left<f16, SK, SM>;
alias Right = subgroup_matrix_right<f16, SN, SK>;
alias Acc = subgroup_matrix_result<f32, SN, SM>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(subgroup_id) sid: u32) {
  let row0 = (wid.y * 2u + sid / 2u) * TM * SM;
  let col0 = (wid.x * 2u + sid % 2u) * TN * SN;
  var acc: array<array<Acc, TN>, TM>;
  for (var i = 0u; i < TM; i++) {
    for (var j = 0u; j < TN; j++) { acc[i][j] = Acc(); }
  }
  for (var k = 0u; k < p.K; k += SK) {
    var a: array<Left, TM>;
    for (var i = 0u; i < TM; i++) {
      a[i] = subgroupMatrixLoad<Left>(&x, (row0 + i * SM) * p.K + k, false, p.K);
    }
    for (var j = 0u; j < TN; j++) {
      // Wᵀ [K, N] is W read column-major: column n of Wᵀ is row n of W.
      let b = subgroupMatrixLoad<Right>(&w, (col0 + j * SN) * p.K + k, true, p.K);
      for (var i = 0u; i < TM; i++) { acc[i][j] = subgroupMatrixMultiplyAccumulate(a[i], b, acc[i][j]); }
    }
  }
  for (var i = 0u; i < TM; i++) {
    for (var j = 0u; j < TN; j++) {
      subgroupMatrixStore(&y, (row0 + i * SM) * p.N + col0 + j * SN, acc[i][j], false, p.N);
    }
  }
}
