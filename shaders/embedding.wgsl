// Embedding lookup (forward) and its scatter-add (backward).
// T is the table's storage type (f32, or f16 with shader-f16); outputs and gradients are f32.
// The backward is deterministic without float atomics: the wrapper sorts positions by token id on the CPU,
// so one thread per (distinct id, column) sums that id's rows of dY in a fixed order.
struct Params { rows: u32, cols: u32, vocab: u32, _pad: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> table: array<T>;          // [vocab, cols]
@group(0) @binding(2) var<storage, read> ids: array<u32>;          // [rows]
@group(0) @binding(3) var<storage, read_write> out: array<f32>;    // [rows, cols]
@group(0) @binding(4) var<storage, read> dy: array<f32>;           // [positions, cols]
@group(0) @binding(5) var<storage, read> order: array<u32>;        // positions sorted by id (stable)
@group(0) @binding(6) var<storage, read> seg_start: array<u32>;    // [segments + 1] offsets into order
@group(0) @binding(7) var<storage, read> seg_id: array<u32>;       // [segments] the id of each segment
@group(0) @binding(8) var<storage, read_write> d_table: array<f32>; // [vocab, cols], accumulated into

fn index(gid: vec3u, nwg: vec3u) -> u32 { return gid.x + gid.y * nwg.x * 256u; }

// out[r, c] = table[ids[r], c]; p.rows = number of ids.
@compute @workgroup_size(256)
fn forward(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = index(gid, nwg);
  if (i >= p.rows * p.cols) { return; }
  let r = i / p.cols;
  let c = i - r * p.cols;
  let id = min(ids[r], p.vocab - 1u);
  out[i] = f32(table[id * p.cols + c]);
}

// d_table[seg_id[s], c] += sum over k in segment s of dy[order[k], c]; p.rows = number of segments.
@compute @workgroup_size(256)
fn backward(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = index(gid, nwg);
  if (i >= p.rows * p.cols) { return; }
  let s = i / p.cols;
  let c = i - s * p.cols;
  var acc = 0.0;
  for (var k = seg_start[s]; k < seg_start[s + 1u]; k++) {
    acc += dy[order[k] * p.cols + c];
  }
  let o = seg_id[s] * p.cols + c;
  d_table[o] = d_table[o] + acc;
}
