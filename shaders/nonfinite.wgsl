// Counts the non-finite elements (NaN, +-Inf) of an f32 or f16 tensor, read as raw 32-bit words so no
// float comparison (which compilers may fold: x != x) is involved, and finds the first one's index.
// out (u32) at [2*slot]: the count (atomic add), [2*slot + 1]: the smallest non-finite index (atomic
// min; the host clears it to 0xffffffff). Grid-stride over the words: any number of workgroups works.
struct Params { n: u32, is_f16: u32, slot: u32, _p: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<atomic<u32>>;

var<workgroup> part: array<u32, 256>;

@compute @workgroup_size(256)
fn count_nonfinite(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) tid: u32) {
  let words = select(p.n, (p.n + 1u) / 2u, p.is_f16 == 1u);
  let stride = nwg.x * 256u;
  var count = 0u;
  var first = 0xffffffffu;
  for (var w = gid.x; w < words; w += stride) {
    let v = x[w];
    if (p.is_f16 == 1u) {
      let e0 = 2u * w;
      if ((v & 0x7c00u) == 0x7c00u) { count += 1u; first = min(first, e0); }
      if (e0 + 1u < p.n && ((v >> 16u) & 0x7c00u) == 0x7c00u) { count += 1u; first = min(first, e0 + 1u); }
    } else if ((v & 0x7f800000u) == 0x7f800000u) {
      count += 1u;
      first = min(first, w);
    }
  }
  part[tid] = count;
  workgroupBarrier();
  for (var s = 128u; s > 0u; s >>= 1u) {
    if (tid < s) { part[tid] += part[tid + s]; }
    workgroupBarrier();
  }
  if (tid == 0u && part[0] > 0u) { atomicAdd(&out[2u * p.slot], part[0]); }
  if (first != 0xffffffffu) { atomicMin(&out[2u * p.slot + 1u], first); }
}
