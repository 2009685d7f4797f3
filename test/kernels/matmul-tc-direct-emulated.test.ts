// shaders/matmul_tc_direct.wgsl (x·Wᵀ on tensor cores for 128-2047 rows) on the CPU drivers, its subgroup matrices
// emulated in plain WGSL (test/helpers/subgroup-matrix-emulation.ts). Under Deno (lavapipe has shader-f16) the
// kernel runs as written, both versions: f16 fragments loaded straight from storage (K split over 2 and 8
// subgroups of a workgroup) and from slices staged in workgroup memory (1, 2 and 4 subgroups, several slices);
// whole and padded row tiles, several column tiles, power-of-two row scales, alpha and accumulation, and two or
// three weights in one dispatch (MULTI, THREE), against a float64 reference over the same f16 operands. Under Node
// (SwiftShader has no f16) it is compiled only, f16 read as f32. On a GPU with subgroup matrices the kernel itself runs through matmul (matmul-tc.test.ts).
import { describe, expect, it } from 'vitest';
import { toF16Array, fromF16Array } from '../../src/gpu/dtype.ts';
import { type Gpu, variantHeader } from '../../src/gpu/gpu.ts';
import { SHADERS } from '../../src/generated/shaders.ts';
import { preprocessWgsl } from '../../src/gpu/preprocess.ts';
import { testGpu } from '../helpers/gpu.ts';
import { randn, relError } from '../helpers/random.ts';
import { emulateSubgroupMatrices } from '../helpers/subgroup-matrix-emulation.ts';
import { compileChecked, dispatchEntry, storageBuffer, uniformBuffer } from '../helpers/wgsl-run.ts';

const TILE = 64; // rows and columns of out a workgroup: 4 x 4 fragments of 16

/** The kernel (staged: version 2) for `ks` subgroups of 32 with its subgroup matrices emulated; f16 read as f32 where
 * the device lacks it. */
function emulatedDirect(gpu: Gpu, ks: number, staged: boolean, parts = 1): string {
  const consts = { SM: 16, SN: 16, SK: 16, SG: 32, KS: ks, STAGED: staged, MULTI: parts > 1, THREE: parts === 3 };
  const source = preprocessWgsl(SHADERS.matmul_tc_direct!, consts, 'matmul_tc_direct');
  const code = variantHeader({ enables: gpu.f16 ? ['f16'] : [], consts }) + emulateSubgroupMatrices(source, ks);
  return gpu.f16 ? code : code.replace(/\bf16\b/g, 'f32');
}

interface Case {
  M: number;
  N: number;
  K: number;
  ks: number;
  staged: boolean;
  alpha: number;
  accumulate: boolean;
  /** Columns of each weight where there are two or three in one dispatch (then N is their sum, alpha 1, no
   * accumulation). */
  parts?: number[];
}

/** out as the kernel writes it and as float64 computes it from the same f16 operands (the parts' outs side by side,
 * each row-major on its own). */
async function run(gpu: Gpu, c: Case, seed: number) {
  const mp = Math.ceil(c.M / TILE) * TILE;
  // x as the cast hands it over: rows times a power of two (2^-3..2^3), rounded to f16; padding rows zero
  const scale = Float32Array.from({ length: mp }, (_, r) => (r < c.M ? 2 ** ((r % 7) - 3) : 1));
  const xs = randn(mp * c.K, seed, 1).map((v, i) => (Math.floor(i / c.K) < c.M ? v * scale[Math.floor(i / c.K)]! : 0));
  const x16 = toF16Array(xs);
  const w16 = toF16Array(randn(c.N * c.K, seed + 1, 0.5));
  const out0 = c.accumulate ? randn(c.M * c.N, seed + 2, 1) : new Float32Array(c.M * c.N).fill(NaN);
  const [x, w] = [fromF16Array(x16), fromF16Array(w16)];
  // The parts' weights are consecutive rows of w, part i's out the i-th M x N_i block of want.
  const parts = c.parts ?? [c.N];
  const first = parts.map((_, i) => parts.slice(0, i).reduce((a, b) => a + b, 0));
  const want = new Float32Array(c.M * c.N);
  parts.forEach((Ni, i) => {
    for (let r = 0; r < c.M; r++) {
      for (let n = 0; n < Ni; n++) {
        let s = 0;
        for (let k = 0; k < c.K; k++) s += x[r * c.K + k]! * w[(first[i]! + n) * c.K + k]!;
        const at = first[i]! * c.M + r * Ni + n;
        want[at] = (c.alpha * s) / scale[r]! + (c.accumulate ? out0[at]! : 0);
      }
    }
  });
  const params = new Uint32Array([c.M, parts[0]!, c.K, c.accumulate ? 1 : 0, 0, c.K / c.ks, parts[1] ?? 0, parts[2] ?? 0]);
  new Float32Array(params.buffer)[4] = c.alpha;
  const packed = (h: Uint16Array) => (gpu.f16 ? new Uint32Array(h.buffer, h.byteOffset, h.length / 2) : fromF16Array(h));
  const ws = parts.map((Ni, i) => storageBuffer(gpu, packed(w16.subarray(first[i]! * c.K, (first[i]! + Ni) * c.K))));
  const outs = parts.map((Ni, i) => storageBuffer(gpu, out0.subarray(first[i]! * c.M, (first[i]! + Ni) * c.M), GPUBufferUsage.COPY_SRC));
  const buffers: Record<number, GPUBuffer> = { 0: uniformBuffer(gpu, params), 1: storageBuffer(gpu, packed(x16)), 2: ws[0]!, 3: outs[0]!, 4: storageBuffer(gpu, scale) };
  parts.slice(1).forEach((_, i) => Object.assign(buffers, { [5 + 2 * i]: ws[i + 1]!, [6 + 2 * i]: outs[i + 1]! }));
  const module = await compileChecked(gpu, emulatedDirect(gpu, c.ks, c.staged, parts.length));
  await dispatchEntry(gpu, module, 'main', buffers, [c.N / TILE, mp / TILE]);
  const got = new Float32Array(c.M * c.N);
  for (const [i, Ni] of parts.entries()) {
    got.set(new Float32Array(await gpu.readBytes(outs[i]!, 0, c.M * Ni * 4, `emulated matmul_tc_direct out ${i}`)), first[i]! * c.M);
  }
  for (const b of Object.values(buffers)) b.destroy();
  return { got, want };
}

const isDeno = 'Deno' in globalThis;

describe.runIf(isDeno)('matmul_tc_direct, subgroup matrices emulated (f16 fragments from storage or staged)', () => {
  const cases: Case[] = [
    // two row tiles (the second padded), two column tiles, 3 steps a subgroup, 4 elements of a fragment a thread
    { M: 70, N: 128, K: 96, ks: 2, staged: false, alpha: 0.75, accumulate: true },
    { M: 37, N: 64, K: 160, ks: 2, staged: false, alpha: 1, accumulate: false },
    // 2 steps a subgroup, every thread one element of a fragment, 8 partial products summed
    { M: 5, N: 64, K: 256, ks: 8, staged: false, alpha: -2, accumulate: false },
    // staged: 3 slices of 32 (two rows of tiles, the second padded; two columns), 5 slices of 16 (one subgroup),
    // 2 slices of 64 (4 subgroups, 2 elements of a fragment a thread)
    { M: 70, N: 128, K: 96, ks: 2, staged: true, alpha: 0.75, accumulate: true },
    { M: 20, N: 64, K: 80, ks: 1, staged: true, alpha: 1, accumulate: false },
    { M: 64, N: 128, K: 128, ks: 4, staged: true, alpha: -2, accumulate: true },
    // 2 slices of 128 (8 subgroups, every thread one element of a fragment)
    { M: 9, N: 64, K: 256, ks: 8, staged: true, alpha: 0.5, accumulate: false },
    // two and three weights in one dispatch (q, k, v; gate, up), of 1-2 column tiles each, both versions
    { M: 70, N: 256, K: 96, ks: 2, staged: false, alpha: 1, accumulate: false, parts: [128, 64, 64] },
    { M: 37, N: 192, K: 128, ks: 4, staged: false, alpha: 1, accumulate: false, parts: [64, 128] },
    { M: 70, N: 256, K: 96, ks: 2, staged: true, alpha: 1, accumulate: false, parts: [128, 64, 64] },
    { M: 20, N: 192, K: 128, ks: 4, staged: true, alpha: 1, accumulate: false, parts: [64, 128] },
  ];
  for (const c of cases) {
    it(`${c.staged ? 'staged' : 'from storage'}: ${c.M}x${c.N}x${c.K}${c.parts ? ` as weights of ${c.parts.join(' + ')} columns` : ''}, ${c.ks} subgroup${c.ks > 1 ? 's' : ''} over K, alpha ${c.alpha}${c.accumulate ? ', accumulating' : ''}`, async (ctx) => {
      const gpu = await testGpu();
      if (!gpu.f16) return ctx.skip('no shader-f16');
      const { got, want } = await run(gpu, c, 11 + c.ks + (c.staged ? 5 : 0));
      expect(got.some(Number.isNaN)).toBe(false);
      // f32 accumulation of f16 products against float64 (measured under lavapipe: at most 2.1e-7, staged with 1 subgroup)
      expect(relError(got, want)).toBeLessThan(2e-6);
    });
  }
});

describe.skipIf(isDeno)('matmul_tc_direct compiles with its subgroup matrices emulated (f16 read as f32)', () => {
  for (const [ks, staged, parts] of [[2, false, 1], [8, false, 1], [1, true, 1], [4, true, 1], [2, false, 3], [4, true, 2]] as const) {
    it(`${staged ? 'staged' : 'from storage'}: ${ks} subgroup${ks > 1 ? 's' : ''} a workgroup${parts > 1 ? `, ${parts} weights` : ''}`, async () => {
      const gpu = await testGpu();
      await compileChecked(gpu, emulatedDirect(gpu, ks, staged, parts));
    });
  }
});
