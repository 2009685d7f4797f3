// The tensor-core shaders compile here too, with its subgroup-matrix types and builtins replaced by plain
// stand-ins: the CPU drivers have no subgroup matrices, so without this a typo in shaders/matmul_tc_tiled.wgsl
// or matmul_tc_direct.wgsl would surface only on a GPU machine. It checks the WGSL around the matrix calls (syntax, types, the
// uniformity of barriers), for every layout and both operand types; the products themselves are checked on a
// GPU with the feature (matmul-tc.test.ts, troupe doctor).
import { describe, expect, it } from 'vitest';
import { type Gpu, variantHeader } from '../../src/gpu/gpu.ts';
import { SHADERS } from '../../src/generated/shaders.ts';
import { testGpu } from '../helpers/gpu.ts';

/** Stand-ins for the matrix builtins; fragments load from the arrays `left` and `right` (workgroup or storage). */
const standIns = (left: string, right: string) => `
alias Fragment = vec4f;
fn loadFragmentA(offset: u32, colMajor: bool, stride: u32) -> Fragment { return vec4f(f32(${left}[offset]) + f32(stride) + select(0.0, 1.0, colMajor)); }
fn loadFragmentB(offset: u32, colMajor: bool, stride: u32) -> Fragment { return vec4f(f32(${right}[offset]) + f32(stride) + select(0.0, 1.0, colMajor)); }
fn multiplyAccumulate(l: Fragment, r: Fragment, c: Fragment) -> Fragment { return l * r + c; }
fn storeFragment(offset: u32, v: Fragment, colMajor: bool, stride: u32) { tileC[offset + stride + select(0u, 1u, colMajor)] = v.x; }
`;

/** The shader with subgroup matrices replaced by vec4f stand-ins (and subgroup_id, subgroup_invocation_id by the
 * invocation index / SG, % SG); `left`, `right`: the arrays its fragments load from. */
function standIn(source: string, left = 'tileA', right = 'tileB'): string {
  return source
    .replace(/alias (Left|Right|Acc) = subgroup_matrix_\w+<[^>]*>;/g, 'alias $1 = Fragment;')
    .replace(new RegExp(`subgroupMatrixLoad<Left>\\(&${left}, `, 'g'), 'loadFragmentA(')
    .replace(new RegExp(`subgroupMatrixLoad<Right>\\(&${right}, `, 'g'), 'loadFragmentB(')
    .replace(/subgroupMatrixMultiplyAccumulate\(/g, 'multiplyAccumulate(')
    .replace(/subgroupMatrixStore\(&tileC, /g, 'storeFragment(')
    .replace(/@builtin\(subgroup_id\) sid: u32,( @builtin\(subgroup_invocation_id\) lane: u32,)?/, '@builtin(local_invocation_id) lidv: vec3u,')
    .replace(/(fn main\([\s\S]*?\)\s*\{)/, '$1\n  let sid = lidv.x / SG;\n  let lane = lidv.x % SG;')
    .replace(/(@compute @workgroup_size)/, `${standIns(left, right)}\n$1`);
}

/** The stood-in shader has no matrix calls left, compiles without errors and makes a pipeline. */
async function expectCompiles(gpu: Gpu, code: string): Promise<void> {
  expect(code).not.toMatch(/subgroup_matrix|subgroupMatrix/);
  const module = gpu.device.createShaderModule({ code });
  const errors = (await module.getCompilationInfo()).messages.filter((m) => m.type === 'error');
  expect(errors.map((m) => `${m.lineNum}:${m.linePos} ${m.message}`)).toEqual([]);
  await gpu.device.createComputePipelineAsync({ layout: 'auto', compute: { module, entryPoint: 'main' } });
}

describe('matmul_tc_direct compiles', () => {
  for (const ks of [1, 8]) {
    it(`${ks} subgroups a workgroup`, async () => {
      const gpu = await testGpu();
      const header = variantHeader({ enables: gpu.f16 ? ['f16'] : [], consts: { SM: 16, SN: 16, SK: 16, SG: 32, KS: ks } });
      let code = header + standIn(SHADERS.matmul_tc_direct!, 'x', 'w');
      if (!gpu.f16) code = code.replace(/\bf16\b/g, 'f32');
      await expectCompiles(gpu, code);
    });
  }
});

describe('matmul_tc_tiled compiles', () => {
  for (const [transA, transB] of [[false, true], [false, false], [true, false], [true, true]] as const) {
    for (const t of ['f32', 'f16'] as const) {
      it(`${transA ? 'aᵀ' : 'a'}·${transB ? 'bᵀ' : 'b'}, ${t} operands, vec4 and scalar loads`, async (ctx) => {
        const gpu = await testGpu();
        if (t === 'f16' && !gpu.f16) return ctx.skip();
        for (const v of [4, 1] as const) {
          const [ta, tb] = gpu.f16 ? [t, 'f16'] : ['f32', 'f32'];
          const header = variantHeader({
            enables: gpu.f16 ? ['f16'] : [],
            aliases: { TA: ta, TB: tb, AV: v === 4 ? `vec4<${ta}>` : ta, BV: v === 4 ? `vec4<${tb}>` : tb },
            consts: { SM: 16, SN: 16, SK: 16, WGM: 1, WGN: 2, SG: 32, KT: 16, TRANS_A: transA, TRANS_B: transB, VA: v, VB: v,
              FILL_SCALE_A: ta === 'f32', FILL_SCALE_B: tb === 'f32' },
          });
          let code = header + standIn(SHADERS.matmul_tc_tiled!);
          // without shader-f16 (SwiftShader) the staged tiles are f32: the same code otherwise
          if (!gpu.f16) code = code.replace(/\bf16\b/g, 'f32');
          await expectCompiles(gpu, code);
        }
      });
    }
  }
});
