// SwiGLU h = silu(gate) * up and its backward (shaders/swiglu.wgsl).
import type { Gpu } from '../gpu/gpu.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { Uniforms } from '../gpu/uniforms.ts';
import { expectDtype, expectShape, sameDtype } from './check.ts';
import { ceilDiv, grid1d } from './grid.ts';

export function swiglu(gpu: Gpu, gate: Tensor, up: Tensor, out?: Tensor): Tensor {
  const k = 'swiglu';
  expectDtype(k, gate, 'f32', 'f16');
  expectShape(k, up, gate.shape);
  const h = out ?? gpu.tensor(gate.shape, gate.dtype, 'swiglu.h');
  sameDtype(k, gate, up, h);
  expectShape(k, h, gate.shape);
  gpu.dispatch({
    shader: 'swiglu',
    entry: 'forward',
    variant: { aliases: { T: gate.dtype } },
    uniforms: new Uniforms().u32(gate.size).u32(0).u32(0).u32(0),
    bindings: [gate, up, h, null, null, null],
    workgroups: grid1d(ceilDiv(gate.size, 256)),
    label: k,
  });
  return h;
}

export function swigluBackward(gpu: Gpu, gate: Tensor, up: Tensor, dh: Tensor, out: { dGate?: Tensor; dUp?: Tensor } = {}): { dGate: Tensor; dUp: Tensor } {
  const k = 'swiglu_backward';
  expectDtype(k, gate, 'f32', 'f16');
  const dGate = out.dGate ?? gpu.tensor(gate.shape, gate.dtype, 'swiglu.d_gate');
  const dUp = out.dUp ?? gpu.tensor(gate.shape, gate.dtype, 'swiglu.d_up');
  for (const t of [up, dh, dGate, dUp]) expectShape(k, t, gate.shape);
  sameDtype(k, gate, up, dh, dGate, dUp);
  gpu.dispatch({
    shader: 'swiglu',
    entry: 'backward',
    variant: { aliases: { T: gate.dtype } },
    uniforms: new Uniforms().u32(gate.size).u32(0).u32(0).u32(0),
    bindings: [gate, up, null, dh, dGate, dUp],
    workgroups: grid1d(ceilDiv(gate.size, 256)),
    label: k,
  });
  return { dGate, dUp };
}
