// Fused log-probabilities over the full vocabulary, one workgroup per row of logits [rows, V]:
// z = logits / temperature; lse = logsumexp(z); logp = z[target] − lse; entropy = −Σ p·log p.
// One pass with an online (max, Σe, Σe·(z−max)) state per thread, merged across the workgroup.
// The backward overwrites the logits chunk in place with
//   d logits = (dlogp·(onehot − p) − dentropy·p·(log p + entropy)) / temperature,
// so a caller running rows in chunks never holds a full [T, V] gradient. Per-row arrays (targets,
// logp, entropy, lse, dlogp, dentropy) are indexed at row_offset + row, so chunks share them.
const WG = 256u;
const NEG_BIG = -3.0e38;

struct Params { rows: u32, vocab: u32, inv_temp: f32, row_offset: u32, use_dentropy: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> logits: array<T>;  // [rows, vocab]; gradient after backward
@group(0) @binding(2) var<storage, read> targets: array<u32>;
@group(0) @binding(3) var<storage, read_write> logp: array<f32>;
@group(0) @binding(4) var<storage, read_write> entropy: array<f32>;
@group(0) @binding(5) var<storage, read_write> lse: array<f32>;
@group(0) @binding(6) var<storage, read> dlogp: array<f32>;
@group(0) @binding(7) var<storage, read> dentropy: array<f32>;

var<workgroup> red_m: array<f32, WG>;
var<workgroup> red_s: array<f32, WG>;
var<workgroup> red_w: array<f32, WG>;

struct State { m: f32, s: f32, w: f32 } // s = Σ exp(z − m), w = Σ exp(z − m)·(z − m)

fn rescale(a: State, m: f32) -> State {
  let f = exp(a.m - m);
  return State(m, a.s * f, f * (a.w + a.s * (a.m - m)));
}

fn merge(a: State, b: State) -> State {
  let m = max(a.m, b.m);
  let x = rescale(a, m);
  let y = rescale(b, m);
  return State(m, x.s + y.s, x.w + y.w);
}

@compute @workgroup_size(WG)
fn forward(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let row = wid.x + wid.y * nwg.x;
  if (row >= p.rows) { return; }
  let base = row * p.vocab;
  var st = State(NEG_BIG, 0.0, 0.0);
  for (var j = lid; j < p.vocab; j += WG) {
    let z = f32(logits[base + j]) * p.inv_temp;
    if (z > st.m) {
      st = rescale(st, z);
      st.s += 1.0;
    } else {
      let e = exp(z - st.m);
      st.s += e;
      st.w += e * (z - st.m);
    }
  }
  red_m[lid] = st.m;
  red_s[lid] = st.s;
  red_w[lid] = st.w;
  workgroupBarrier();
  for (var k = WG / 2u; k > 0u; k >>= 1u) {
    if (lid < k) {
      let r = merge(State(red_m[lid], red_s[lid], red_w[lid]), State(red_m[lid + k], red_s[lid + k], red_w[lid + k]));
      red_m[lid] = r.m;
      red_s[lid] = r.s;
      red_w[lid] = r.w;
    }
    workgroupBarrier();
  }
  if (lid == 0u) {
    let g = p.row_offset + row;
    let l = red_m[0] + log(red_s[0]);
    lse[g] = l;
    logp[g] = f32(logits[base + targets[g]]) * p.inv_temp - l;
    entropy[g] = log(red_s[0]) - red_w[0] / red_s[0];
  }
}

@compute @workgroup_size(WG)
fn backward(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let row = wid.x + wid.y * nwg.x;
  if (row >= p.rows) { return; }
  let g = p.row_offset + row;
  let base = row * p.vocab;
  let l = lse[g];
  let h = entropy[g];
  let t = targets[g];
  let a = dlogp[g];
  var b = 0.0;
  if (p.use_dentropy != 0u) { b = dentropy[g]; }
  for (var j = lid; j < p.vocab; j += WG) {
    let lp = f32(logits[base + j]) * p.inv_temp - l;
    let pr = exp(lp);
    var d = -a * pr - b * pr * (lp + h);
    if (j == t) { d += a; }
    logits[base + j] = T(d * p.inv_temp);
  }
}
