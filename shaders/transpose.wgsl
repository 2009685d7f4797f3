// 2-D transpose x [R, C] -> out [C, R] (storage T: f32 or f16). A 32x32 tile passes through workgroup
// memory (one padding column against bank conflicts) so both the read and the write are coalesced.
// Workgroups of 32x8 threads, each moving 4 elements. The output may be a block of a larger matrix:
// out[base + c·ld + r] (ld = R, base = 0 for a plain transpose; a LoRA bank slot otherwise).
struct Params { R: u32, C: u32, ld: u32, base: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<T>;
@group(0) @binding(2) var<storage, read_write> out: array<T>;

const TILE = 32u;

var<workgroup> tile: array<f32, 1056>; // [TILE][TILE + 1]

@compute @workgroup_size(32, 8)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let r0 = wg.y * TILE;
  let c0 = wg.x * TILE;
  for (var j = lid.y; j < TILE; j += 8u) {
    let r = r0 + j;
    let c = c0 + lid.x;
    if (r < p.R && c < p.C) { tile[j * (TILE + 1u) + lid.x] = f32(x[r * p.C + c]); }
  }
  workgroupBarrier();
  for (var j = lid.y; j < TILE; j += 8u) {
    let c = c0 + j;
    let r = r0 + lid.x;
    if (r < p.R && c < p.C) { out[p.base + c * p.ld + r] = T(tile[lid.x * (TILE + 1u) + j]); }
  }
}
