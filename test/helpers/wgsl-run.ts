// Running a WGSL module by hand (outside Gpu.dispatch): for tests that run a transformed shader, such as one whose
// subgroup matrices are emulated (subgroup-matrix-emulation.ts).
import { expect } from 'vitest';
import { type Gpu, variantHeader } from '../../src/gpu/gpu.ts';
import { SHADERS } from '../../src/generated/shaders.ts';
import { emulateSubgroupMatrices } from './subgroup-matrix-emulation.ts';

const modules = new WeakMap<Gpu, Map<string, GPUShaderModule>>();
const pipelines = new WeakMap<GPUShaderModule, Map<string, Promise<GPUComputePipeline>>>();

/** The module of `code`, failing the test with the compiler's errors when there are any; one per code and device, so
 *  tests that share a shader share its pipelines too (the CPU drivers take tens of seconds for an emulated one). */
export async function compileChecked(gpu: Gpu, code: string): Promise<GPUShaderModule> {
  const known = modules.get(gpu) ?? new Map<string, GPUShaderModule>();
  modules.set(gpu, known);
  const cached = known.get(code);
  if (cached) return cached;
  const module = gpu.device.createShaderModule({ code });
  const errors = (await module.getCompilationInfo()).messages.filter((m) => m.type === 'error');
  expect(errors.map((m) => `${m.lineNum}:${m.linePos} ${m.message}`)).toEqual([]);
  known.set(code, module);
  return module;
}

function pipelineOf(gpu: Gpu, module: GPUShaderModule, entry: string): Promise<GPUComputePipeline> {
  const known = pipelines.get(module) ?? new Map<string, Promise<GPUComputePipeline>>();
  pipelines.set(module, known);
  if (!known.has(entry)) known.set(entry, gpu.device.createComputePipelineAsync({ layout: 'auto', compute: { module, entryPoint: entry } }));
  return known.get(entry)!;
}

/** A storage buffer holding `data` (16 bytes at least), with extra usages such as COPY_SRC. */
export function storageBuffer(gpu: Gpu, data: Float32Array | Uint32Array, usage = 0): GPUBuffer {
  const buffer = gpu.device.createBuffer({ size: Math.max(16, data.byteLength), usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | usage });
  gpu.device.queue.writeBuffer(buffer, 0, data.buffer as ArrayBuffer, data.byteOffset, data.byteLength);
  return buffer;
}

/** A uniform buffer holding `data`. */
export function uniformBuffer(gpu: Gpu, data: Uint32Array): GPUBuffer {
  const buffer = gpu.device.createBuffer({ size: data.byteLength, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
  gpu.device.queue.writeBuffer(buffer, 0, data.buffer as ArrayBuffer, data.byteOffset, data.byteLength);
  return buffer;
}

/** One compute pass dispatching `entry` of `module` over `workgroups`, with `buffers` at their binding numbers
 *  (the entry's own bindings only: its layout is 'auto'), submitted at once. */
export async function dispatchEntry(gpu: Gpu, module: GPUShaderModule, entry: string, buffers: Record<number, GPUBuffer>, workgroups: [number, number?]): Promise<void> {
  const pipeline = await pipelineOf(gpu, module, entry);
  const bindGroup = gpu.device.createBindGroup({
    layout: pipeline.getBindGroupLayout(0),
    entries: Object.entries(buffers).map(([binding, buffer]) => ({ binding: Number(binding), resource: { buffer } })),
  });
  const encoder = gpu.device.createCommandEncoder();
  const pass = encoder.beginComputePass();
  pass.setPipeline(pipeline);
  pass.setBindGroup(0, bindGroup);
  pass.dispatchWorkgroups(workgroups[0], workgroups[1] ?? 1);
  pass.end();
  gpu.device.queue.submit([encoder.finish()]);
}

/** An attention tensor-core shader (head dim 128) with its subgroup matrices emulated for `subgroups` subgroups of 32;
 *  f16 read as f32 where the device has no shader-f16 (compile-only use). */
export function emulatedAttentionTc(gpu: Gpu, shader: 'attention_prefill_tc' | 'attention_backward_tc', subgroups: number): string {
  const header = variantHeader({ enables: gpu.f16 ? ['f16'] : [], consts: { SM: 16, SN: 16, SK: 16, SG: 32, HD: 128, NSG: subgroups } });
  const code = header + emulateSubgroupMatrices(SHADERS[shader]!, subgroups);
  return gpu.f16 ? code : code.replace(/\bf16\b/g, 'f32');
}
