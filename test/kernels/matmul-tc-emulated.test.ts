// The tensor-core shaders on the CPU drivers, which have no subgroup matrices: their matrix types and builtins are
// replaced by an emulation in plain WGSL (a 16 x 16 fragment spread over a subgroup's 32 invocations; loads,
// stores and multiply-accumulate as Dawn defines them, docs/dawn/features/subgroup_matrix.md), so
// shaders/matmul_tc_tiled.wgsl runs here and its tiling, staging (one slice or two), vec4 and scalar fills, bounds,
// scales, alpha and accumulation are checked against the CPU reference on every layout. On a GPU with the feature
// the same kernel is checked as it is (matmul-tc.test.ts, troupe doctor); matmul_tc_direct has its own file
// (matmul-tc-direct-emulated.test.ts, on the shared emulation of test/helpers/subgroup-matrix-emulation.ts).
import { describe, expect, it } from 'vitest';
import { type Gpu, variantHeader } from '../../src/gpu/gpu.ts';
import { preprocessWgsl } from '../../src/gpu/preprocess.ts';
import { SHADERS } from '../../src/generated/shaders.ts';
import { testGpu } from '../helpers/gpu.ts';
import { randn, relError } from '../helpers/random.ts';
import { matmulRef } from '../ref/matmul.ts';

/** The emulated fragments: 16 x 16 (the tests set SM = SN = SK = 16) over a subgroup of 32 invocations, each
 * holding 8 consecutive elements of the row-major fragment (a left fragment is rows x depth, a right one depth x
 * columns, a result rows x columns). A multiply-accumulate passes both inputs through workgroup memory (one
 * 512-float scratch per subgroup; it is called in uniform control flow, as the real builtin must be). */
const emulation = (left: string, right: string, subgroups: string) => `
alias Fragment = array<f32, 8>;
var<private> emuLane: u32;
var<private> emuSid: u32;
var<workgroup> emuScratch: array<f32, ${subgroups} * 512u>;
fn loadFragmentA(colMajor: bool, offset: u32, stride: u32) -> Fragment {
  var f: Fragment;
  for (var i = 0u; i < 8u; i++) {
    let r = (emuLane * 8u + i) / 16u;
    let k = (emuLane * 8u + i) % 16u;
    f[i] = f32(${left}[select(offset + r * stride + k, offset + k * stride + r, colMajor)]);
  }
  return f;
}
fn loadFragmentB(colMajor: bool, offset: u32, stride: u32) -> Fragment {
  var f: Fragment;
  for (var i = 0u; i < 8u; i++) {
    let k = (emuLane * 8u + i) / 16u;
    let n = (emuLane * 8u + i) % 16u;
    f[i] = f32(${right}[select(offset + k * stride + n, offset + n * stride + k, colMajor)]);
  }
  return f;
}
fn multiplyAccumulate(l: Fragment, r: Fragment, c: Fragment) -> Fragment {
  let base = emuSid * 512u;
  for (var i = 0u; i < 8u; i++) {
    emuScratch[base + emuLane * 8u + i] = l[i];
    emuScratch[base + 256u + emuLane * 8u + i] = r[i];
  }
  workgroupBarrier();
  var o = c;
  for (var i = 0u; i < 8u; i++) {
    let row = (emuLane * 8u + i) / 16u;
    let col = (emuLane * 8u + i) % 16u;
    for (var k = 0u; k < 16u; k++) { o[i] += emuScratch[base + row * 16u + k] * emuScratch[base + 256u + k * 16u + col]; }
  }
  workgroupBarrier();
  return o;
}
fn storeFragment(colMajor: bool, offset: u32, v: Fragment, stride: u32) {
  for (var i = 0u; i < 8u; i++) {
    let r = (emuLane * 8u + i) / 16u;
    let n = (emuLane * 8u + i) % 16u;
    tileC[select(offset + r * stride + n, offset + n * stride + r, colMajor)] = v[i];
  }
}
`;

/** Stand-ins that only type-check (the compile-only cases below). */
const placeholders = (left: string, right: string) => `
alias Fragment = vec4f;
fn loadFragmentA(colMajor: bool, offset: u32, stride: u32) -> Fragment { return vec4f(f32(${left}[offset]) + f32(stride) + select(0.0, 1.0, colMajor)); }
fn loadFragmentB(colMajor: bool, offset: u32, stride: u32) -> Fragment { return vec4f(f32(${right}[offset]) + f32(stride) + select(0.0, 1.0, colMajor)); }
fn multiplyAccumulate(l: Fragment, r: Fragment, c: Fragment) -> Fragment { return l * r + c; }
fn storeFragment(colMajor: bool, offset: u32, v: Fragment, stride: u32) { tileC[offset + stride + select(0u, 1u, colMajor)] = v.x; }
`;

/** The shader, preprocessed for its variant `consts`, with its subgroup matrices replaced by `builtins` (and
 * subgroup_id, subgroup_invocation_id derived from the invocation index and SG = 32); `left`, `right`: the arrays
 * its fragments load from. The builtins' majorness (a template argument) becomes the stand-ins' first argument. */
function standIn(source: string, consts: Record<string, number | boolean>, builtins: string, left = 'tileA', right = 'tileB'): string {
  const colMajor = (m: string) => String(m === 'col_major');
  return preprocessWgsl(source, consts)
    .replace(/alias (Left|Right|Acc) = subgroup_matrix_\w+<[^>]*>;/g, 'alias $1 = Fragment;')
    .replace(new RegExp(`subgroupMatrixLoad<Left, (row_major|col_major)>\\(&${left}, `, 'g'), (_, m: string) => `loadFragmentA(${colMajor(m)}, `)
    .replace(new RegExp(`subgroupMatrixLoad<Right, (row_major|col_major)>\\(&${right}, `, 'g'), (_, m: string) => `loadFragmentB(${colMajor(m)}, `)
    .replace(/subgroupMatrixMultiplyAccumulate\(/g, 'multiplyAccumulate(')
    .replace(/subgroupMatrixStore<(row_major|col_major)>\(&tileC, /g, (_, m: string) => `storeFragment(${colMajor(m)}, `)
    .replace(/@builtin\(subgroup_id\) sid: u32,( @builtin\(subgroup_invocation_id\) lane: u32,)?/, '@builtin(local_invocation_id) lidv: vec3u,')
    .replace(/(fn main\([\s\S]*?\)\s*\{)/, `$1\n  let sid = lidv.x / SG;\n  let lane = lidv.x % SG;${builtins.includes('emuLane') ? '\n  emuLane = lane;\n  emuSid = sid;' : ''}`)
    .replace(/(@compute @workgroup_size)/, `${builtins}\n$1`);
}

async function compile(gpu: Gpu, code: string): Promise<GPUComputePipeline> {
  expect(code).not.toMatch(/subgroup_matrix|subgroupMatrix/);
  const module = gpu.device.createShaderModule({ code });
  const errors = (await module.getCompilationInfo()).messages.filter((m) => m.type === 'error');
  expect(errors.map((m) => `${m.lineNum}:${m.linePos} ${m.message}`)).toEqual([]);
  return gpu.device.createComputePipelineAsync({ layout: 'auto', compute: { module, entryPoint: 'main' } });
}

function storage(gpu: Gpu, data: Float32Array | Uint32Array, usage = 0): GPUBuffer {
  const buffer = gpu.device.createBuffer({ size: Math.max(16, data.byteLength), usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | usage });
  gpu.device.queue.writeBuffer(buffer, 0, data.buffer as ArrayBuffer, data.byteOffset, data.byteLength);
  return buffer;
}

/** Powers of two from 2^-4 to 2^4: what absmax_scale.wgsl hands the fill, exact to multiply and divide out. */
function powersOfTwo(n: number, seed: number): Float32Array {
  return Float32Array.from(randn(n, seed), (v) => 2 ** Math.round(Math.max(-4, Math.min(4, 3 * v))));
}

interface TiledCase {
  M: number;
  N: number;
  K: number;
  transA: boolean;
  transB: boolean;
  /** Elements a fill load reads (4: the stored-contiguous dimensions are multiples of 4). */
  v: 1 | 4;
  stages: 1 | 2;
  wgm: number;
  wgn: number;
  kt: 16 | 32;
}

/** Runs the emulated tiled kernel with f32 operands scaled in the fill (alpha 0.75, accumulating into `init`)
 * and returns out next to the CPU reference of the same product. */
async function runTiled(gpu: Gpu, c: TiledCase): Promise<{ got: Float32Array; want: Float32Array }> {
  const { M, N, K, transA, transB, v } = c;
  const variant = {
    aliases: { TA: 'f32', TB: 'f32', AV: v === 4 ? 'vec4<f32>' : 'f32', BV: v === 4 ? 'vec4<f32>' : 'f32' },
    consts: { SM: 16, SN: 16, SK: 16, WGM: c.wgm, WGN: c.wgn, SG: 32, KT: c.kt, STAGES: c.stages, TRANS_A: transA, TRANS_B: transB, VA: v, VB: v, FILL_SCALE_A: true, FILL_SCALE_B: true },
  };
  const header = variantHeader(variant);
  // the staged tiles hold f32 here: the emulation checks indexing and control flow, not f16 rounding
  const pipeline = await compile(gpu, header + standIn(SHADERS.matmul_tc_tiled!, variant.consts, emulation('tileA', 'tileB', 'WGM * WGN')).replace(/\bf16\b/g, 'f32'));
  const a = randn(M * K, M * 7 + K);
  const b = randn(K * N, N * 5 + K);
  const init = randn(M * N, M + N);
  const [sa, sb] = [powersOfTwo(M, M + 1), powersOfTwo(N, N + 2)];
  const alpha = 0.75;
  // the fill multiplies op(a)'s rows and op(b)'s columns by their scales, the epilogue divides them out: the
  // product is alpha·op(a)·op(b) + init whatever the scales
  const want = matmulRef(a, b, M, N, K, { transA, transB, alpha, init });
  const params = new Uint32Array([M, N, K, 1, 0, 0, 0, 0]);
  new Float32Array(params.buffer)[4] = alpha;
  const uniform = gpu.device.createBuffer({ size: params.byteLength, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
  gpu.device.queue.writeBuffer(uniform, 0, params);
  const out = storage(gpu, init, GPUBufferUsage.COPY_SRC);
  const buffers = [uniform, storage(gpu, a), storage(gpu, b), out, storage(gpu, sa), storage(gpu, sb)];
  const bindGroup = gpu.device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: buffers.map((buffer, binding) => ({ binding, resource: { buffer } })) });
  const encoder = gpu.device.createCommandEncoder();
  const pass = encoder.beginComputePass();
  pass.setPipeline(pipeline);
  pass.setBindGroup(0, bindGroup);
  pass.dispatchWorkgroups(Math.ceil(N / (c.wgn * 64)), Math.ceil(M / (c.wgm * 64)));
  pass.end();
  gpu.device.queue.submit([encoder.finish()]);
  const got = new Float32Array(await gpu.readBytes(out, 0, M * N * 4, 'emulated tc out'));
  for (const buffer of buffers) buffer.destroy();
  return { got, want };
}

const isDeno = 'Deno' in globalThis;

// Node only: the tensor-core kernels run only under Dawn (wgpu has no subgroup matrices), and lavapipe takes
// minutes over what SwiftShader does in seconds; under Deno the shader is compiled (below).
describe.skipIf(isDeno)('matmul_tc_tiled, subgroup matrices emulated', () => {
  // x·Wᵀ (the model's forward) in every variant; the other layouts through the two-stage loop, whose fills differ
  // only in their coordinates (a minute less of CI than every variant everywhere)
  const variants = (transA: boolean, transB: boolean): TiledCase[] => [
    { M: 68, N: 100, K: 52, transA, transB, v: 4, stages: 2, wgm: 1, wgn: 1, kt: 16 },
    { M: 37, N: 45, K: 29, transA, transB, v: 1, stages: 2, wgm: 1, wgn: 1, kt: 16 },
    ...(transA || !transB
      ? []
      : [
          // one staged slice (the kernel as the H200 runs it) with two subgroups (two staged slices of them would
          // outgrow 32 KiB of f32 tiles)
          { M: 72, N: 140, K: 84, transA, transB, v: 4 as const, stages: 1 as const, wgm: 1, wgn: 2, kt: 16 as const },
          { M: 40, N: 72, K: 84, transA, transB, v: 1 as const, stages: 1 as const, wgm: 1, wgn: 1, kt: 32 as const },
        ]),
  ];
  for (const [transA, transB] of [[false, true], [false, false], [true, false], [true, true]] as const) {
    it(`${transA ? 'aᵀ' : 'a'}·${transB ? 'bᵀ' : 'b'}: ${transA || !transB ? 'two staged slices' : 'one and two staged slices, two subgroups, 32-deep slices'}, vec4 and scalar fills, partial tiles and slices`, async () => {
      const gpu = await testGpu();
      for (const c of variants(transA, transB)) {
        const { got, want } = await runTiled(gpu, c);
        const err = relError(got, want);
        expect({ ...c, ok: err < 1e-5 }).toEqual({ ...c, ok: true });
      }
    });
  }
});

describe.runIf(isDeno)('matmul_tc_tiled compiles (its matrix calls stood in)', () => {
  for (const [transA, transB] of [[false, true], [false, false], [true, false], [true, true]] as const) {
    it(`${transA ? 'aᵀ' : 'a'}·${transB ? 'bᵀ' : 'b'}: one staged slice and two, vec4 and scalar fills`, async () => {
      const gpu = await testGpu();
      for (const [v, stages] of [[4, 1], [1, 2]] as const) {
        const variant = {
          aliases: { TA: 'f32', TB: 'f32', AV: v === 4 ? 'vec4<f32>' : 'f32', BV: v === 4 ? 'vec4<f32>' : 'f32' },
          consts: { SM: 16, SN: 16, SK: 16, WGM: 1, WGN: 1, SG: 32, KT: 16, STAGES: stages, TRANS_A: transA, TRANS_B: transB, VA: v, VB: v, FILL_SCALE_A: true, FILL_SCALE_B: true },
        };
        await compile(gpu, variantHeader(variant) + standIn(SHADERS.matmul_tc_tiled!, variant.consts, placeholders('tileA', 'tileB')).replace(/\bf16\b/g, 'f32'));
      }
    });
  }
});
