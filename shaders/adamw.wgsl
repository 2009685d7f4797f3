// One AdamW step (torch.optim.AdamW, decoupled weight decay) over one parameter tensor, one thread per
// element. P is the parameter's storage (f32, or f16 in full-parameter mode); m, v and the math are f32.
// The gradient is first scaled by grad_scale (global-norm clipping), and zeroed afterwards when
// zero_grad is set, ready for the next accumulation.
struct Params {
  n: u32,
  zero_grad: u32,
  lr: f32,
  beta1: f32,
  beta2: f32,
  eps: f32,
  weight_decay: f32,
  bias_correction1: f32,      // 1 − β1^t
  bias_correction2_sqrt: f32, // √(1 − β2^t)
  grad_scale: f32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> param: array<P>;
@group(0) @binding(2) var<storage, read_write> grad: array<f32>;
@group(0) @binding(3) var<storage, read_write> exp_avg: array<f32>;
@group(0) @binding(4) var<storage, read_write> exp_avg_sq: array<f32>;

@compute @workgroup_size(256)
fn step(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * 256u;
  if (i >= p.n) { return; }
  let g = grad[i] * p.grad_scale;
  var w = f32(param[i]);
  w = w * (1.0 - p.lr * p.weight_decay);
  let m = exp_avg[i] + (1.0 - p.beta1) * (g - exp_avg[i]); // torch: exp_avg.lerp_(grad, 1 − β1)
  let v = exp_avg_sq[i] * p.beta2 + (1.0 - p.beta2) * g * g;
  exp_avg[i] = m;
  exp_avg_sq[i] = v;
  let denom = sqrt(v) / p.bias_correction2_sqrt + p.eps;
  w = w - (p.lr / p.bias_correction1) * (m / denom);
  param[i] = P(w);
  if (p.zero_grad != 0u) { grad[i] = 0.0; }
}
