// The rollout engine as production runs it, where the other engine tests pin a test-only choice:
// - the default KV cache dtype (f16 on devices with shader-f16; engine.test.ts uses f32) against the f32
//   cache, and against transformers' greedy continuation;
// - matmul_rows, the decode kernel real GPUs run (the CPU drivers skip it: src/kernels/matmul.ts),
//   forced through setMatmulPolicy(gpu, 'gpu') and compared with the default path.
import { beforeAll, describe, expect, it } from 'vitest';
import type { Dispatch, Gpu } from '../../src/gpu/gpu.ts';
import { decodeFusesQkNormRope } from '../../src/kernels/attention.ts';
import { matmulPolicy, setMatmulPolicy } from '../../src/kernels/matmul.ts';
import { Qwen3Model } from '../../src/model/qwen3.ts';
import { type EngineOptions, type GenerateOptions, RolloutEngine } from '../../src/rollout/engine.ts';
import { testGpu } from '../helpers/gpu.ts';
import { greedyFixture } from '../helpers/tiny-qwen3.ts';

let gpu: Gpu;
let model: Qwen3Model;
let prompt: number[];
let hfGreedy: number[];

beforeAll(async () => {
  gpu = await testGpu();
  ({ model, prompt: prompt, greedy: hfGreedy } = await greedyFixture(gpu));
});

async function run(opts: EngineOptions, gen: GenerateOptions, prompts: number[][]) {
  const engine = new RolloutEngine(model, null, { kvBudgetBytes: 1 << 20, ...opts });
  try {
    return await Promise.all(prompts.map((p, k) => engine.generate('test', p, { ...gen, stream: k })));
  } finally {
    await engine.close();
  }
}

const maxAbsDiff = (a: number[], b: number[]) => a.reduce((m, x, i) => Math.max(m, Math.abs(x - b[i]!)), 0);

describe('rollout engine, production settings', () => {
  it('the default KV cache is f16 where the device has shader-f16, and decodes as the f32 cache does', async (ctx) => {
    if (!gpu.f16) return ctx.skip(); // SwiftShader: no shader-f16, the cache is f32 there anyway
    const probe = new RolloutEngine(model, null, { kvBudgetBytes: 1 << 20 });
    expect(probe.kv.dtype).toBe('f16');
    await probe.close();
    const greedy: GenerateOptions = { maxNewTokens: 12, temperature: 0, ignoreEos: true };
    const prompts = [prompt, prompt.slice(0, 5), [...prompt, ...prompt].slice(0, 21)];
    const [f16, f32] = [await run({}, greedy, prompts), await run({ kvDtype: 'f32' }, greedy, prompts)];
    // transformers' greedy continuation of the fixture prompt, through the f16 cache too.
    expect(f16[0]!.ids).toEqual(hfGreedy.slice(0, 12));
    for (let i = 0; i < prompts.length; i++) {
      expect(f16[i]!.ids).toEqual(f32[i]!.ids);
      // f16 K/V (11-bit mantissa) moves log-probabilities by ~1e-3 on this model; 2e-2 leaves margin.
      expect(maxAbsDiff(f16[i]!.logprobs, f32[i]!.logprobs)).toBeLessThan(2e-2);
    }
    // Sampled rows: the same seed gives the same tokens as long as the distributions agree closely.
    const sampled: GenerateOptions = { maxNewTokens: 6, temperature: 0.7, seed: 5, ignoreEos: true };
    const [s16, s32] = [await run({}, sampled, [prompt]), await run({ kvDtype: 'f32' }, sampled, [prompt])];
    const same = s16[0]!.ids.findIndex((id, i) => id !== s32[0]!.ids[i]);
    const n = same < 0 ? s16[0]!.ids.length : same;
    expect(n).toBeGreaterThan(0);
    expect(maxAbsDiff(s16[0]!.logprobs.slice(0, n), s32[0]!.logprobs.slice(0, n))).toBeLessThan(2e-2);
  });

  it('decodes through matmul_rows (the GPU decode kernel) as through the default kernels', async () => {
    const greedy: GenerateOptions = { maxNewTokens: 3, temperature: 0, ignoreEos: true };
    const prompts = [prompt, prompt.slice(0, 6)];
    const seen = new Set<string>();
    const labels = new Set<string>();
    const dispatch = gpu.dispatch.bind(gpu);
    // Observes the kernels dispatched (the GPU still runs them all).
    gpu.dispatch = (d: Dispatch) => {
      seen.add(d.shader);
      labels.add(d.label ?? d.shader);
      dispatch(d);
    };
    const before = matmulPolicy(gpu);
    try {
      const base = await run({ kvDtype: 'f32' }, greedy, prompts);
      const baseKernels = new Set(seen);
      seen.clear();
      setMatmulPolicy(gpu, 'gpu');
      const rows = await run({ kvDtype: 'f32' }, greedy, prompts);
      expect(seen.has('matmul_rows')).toBe(true);
      // No adapters: the RMSNorm read inside q/k/v's and gate/up's one dispatch each (matmulRowsNorm), SwiGLU
      // inside down_proj's pass, the norm inside lm_head's.
      for (const label of ['matmul_rows(rmsnorm, q_proj,k_proj,v_proj)', 'matmul_rows(rmsnorm, gate_proj,up_proj)', 'matmul_rows(swiglu, down_proj)', 'matmul_rows(rmsnorm, lm_head)']) {
        expect(labels.has(label), label).toBe(true);
      }
      // The q/k norm and RoPE inside decode attention where the device binds its 12 buffers (SwiftShader, lavapipe do).
      const fused = decodeFusesQkNormRope(gpu, model.dims, 'f32', 2, { numSeqs: 2, maxQueries: 1 });
      expect(labels.has('attention_decode(qk_norm_rope)')).toBe(fused);
      if (gpu.report.cpuDriver === 'SwiftShader') expect(baseKernels.has('matmul_rows')).toBe(false);
      for (let i = 0; i < prompts.length; i++) {
        expect(rows[i]!.ids).toEqual(base[i]!.ids);
        expect(maxAbsDiff(rows[i]!.logprobs, base[i]!.logprobs)).toBeLessThan(1e-4);
      }
      expect(rows[0]!.ids).toEqual(hfGreedy.slice(0, 3));
    } finally {
      setMatmulPolicy(gpu, before);
      gpu.dispatch = dispatch;
    }
  });
});
