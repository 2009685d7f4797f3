// Scatters new tokens' K and V [Tq, nKv·HD] (IT) into their cache slots: row t goes to slot slots[t] of
// the layer's cache buffers [numPages·pageSize, nKv·HD] (CT: f32, or f16 storage). One thread per element.
struct Params { n: u32, row: u32, _p0: u32, _p1: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> k: array<IT>;
@group(0) @binding(2) var<storage, read> v: array<IT>;
@group(0) @binding(3) var<storage, read> slots: array<u32>;
@group(0) @binding(4) var<storage, read_write> kc: array<CT>;
@group(0) @binding(5) var<storage, read_write> vc: array<CT>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * 256u;
  if (i >= p.n) { return; }
  let dst = slots[i / p.row] * p.row + i % p.row;
  kc[dst] = CT(k[i]);
  vc[dst] = CT(v[i]);
}
