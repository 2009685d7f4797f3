// The GRPO trainer end to end on the demo model (real WebGPU, tiny sizes): every workflow x policy
// trains two steps with every per-role metric present; a run saved after one step and restored in a new
// trainer continues to the same adapters, bit for bit, as an uninterrupted run; after an update the
// rollout engine serves the new weights; a lost device ends the step with a named error.
// The workflow x policy matrix runs under Deno (lavapipe, several times faster than SwiftShader on a CPU);
// under Node one cell of it runs, so each runtime trains end to end without repeating the slow cases.
import { beforeAll, describe, expect, it } from 'vitest';
import { Gpu } from '../../src/gpu/gpu.ts';
import { nextTokenBatch, tokenLogprobs } from '../../src/model/backward.ts';
import { Qwen3Model } from '../../src/model/qwen3.ts';
import { DirectorySource } from '../../src/model/source.ts';
import { Qwen3Tokenizer } from '../../src/model/tokenizer.ts';
import { loadQwen3 } from '../../src/model/weights.ts';
import type { RoleStepMetrics, StepRecord } from '../../src/metrics/schema.ts';
import { Trainer, type TrainerConfig } from '../../src/rl/trainer.ts';
import { SMALL_CONFIG } from '../../src/cli/train-config.ts';
import { loadTasks, type TaskSet } from '../../src/tasks/source.ts';
import { WORKFLOW_NAMES, type WorkflowName } from '../../src/workflows/types.ts';
import { workflowByName } from '../../src/workflows/index.ts';
import { testGpu } from '../helpers/gpu.ts';

export const DEMO_DIR = 'public/demo-model';
const isDeno = 'Deno' in globalThis;

let gpu: Gpu;
let model: Qwen3Model;
let tokenizer: Qwen3Tokenizer;
let tasks: TaskSet;

beforeAll(async () => {
  gpu = await testGpu();
  const source = new DirectorySource(DEMO_DIR);
  const { config, weights } = await loadQwen3(gpu, source, { dtype: 'f32' });
  model = new Qwen3Model(gpu, config, weights);
  tokenizer = await Qwen3Tokenizer.load(source, { required: true });
  tasks = await loadTasks({ kind: 'math', builtin: 'demo', seed: 0 });
});

function config(workflow: WorkflowName, policy: 'shared' | 'isolated', over: Partial<TrainerConfig> = {}): TrainerConfig {
  return {
    ...structuredClone(SMALL_CONFIG),
    workflow,
    policy,
    taskName: 'demo',
    modelName: 'demo',
    steps: 2,
    batchTasks: 2,
    groupSize: 2,
    sampling: { temperature: 1, topP: 1, maxNewTokens: 20 },
    validation: { every: 1, tasks: 3, temperature: 0 },
    lora: { rank: 4, alpha: 8, targets: ['q_proj', 'v_proj', 'down_proj'] },
    ...over,
  };
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

const ROLE_FIELDS: (keyof RoleStepMetrics)[] = [
  'turns', 'reward', 'accuracy', 'responseLength', 'truncatedFrac', 'entropy', 'perplexity', 'logRatio', 'clipFrac',
  'clipFracLower', 'gradNorm', 'tokens', 'gradMass', 'formatViolationRate', 'drift', 'advantage',
];

describe('Trainer', () => {
  for (const workflow of WORKFLOW_NAMES) {
    for (const policy of ['shared', 'isolated'] as const) {
      const here = isDeno || (workflow === 'voting' && policy === 'isolated');
      it.skipIf(!here)(`${workflow} / ${policy}: two steps with every per-role metric`, { timeout: 600_000 }, async () => {
        const records: StepRecord[] = [];
        const trainer = new Trainer({ gpu, model, tokenizer, tasks, config: config(workflow, policy), onRecord: (r) => r.type === 'step' && records.push(r) });
        expect(trainer.adapters.names.sort()).toEqual(policy === 'shared' ? ['policy'] : [...workflowByName(workflow).roles].sort());
        while (!trainer.done) await trainer.trainStep();
        expect(records.map((r) => r.step)).toEqual([1, 2]);
        for (const r of records) {
          expect(Object.keys(r.roles).sort()).toEqual([...workflowByName(workflow).roles].sort());
          for (const [role, m] of Object.entries(r.roles)) {
            for (const f of ROLE_FIELDS) expect([role, f, m![f] !== undefined]).toEqual([role, f, true]);
            expect(m!.turns).toBeGreaterThan(0);
            expect(Number.isFinite(m!.perplexity) && m!.perplexity > 1).toBe(true);
            expect(m!.gradNorm === null || Number.isFinite(m!.gradNorm)).toBe(true);
            expect(m!.tokens).toBeGreaterThan(0);
            // one epoch, one mini-batch: logp_old comes from the training forward, so the ratio is 1
            expect(m!.logRatio).toBe(0);
            expect(m!.clipFrac).toBe(0);
          }
          const adapters = Object.keys(r.adapters).sort();
          expect(adapters).toEqual(trainer.adapters.names.sort());
          expect(r.timings.rolloutMs).toBeGreaterThan(0);
          expect(r.memory.peakBytes).toBeGreaterThan(0);
        }
        if (policy === 'shared') {
          // each role's own contribution to the one adapter's gradient
          for (const m of Object.values(records[0]!.roles)) expect(m!.gradNorm).not.toBeNull();
        }
        await trainer.release();
      });
    }
  }

  it.skipIf(!isDeno)('a restored trainer continues exactly: bit-equal adapters after the same steps', { timeout: 600_000 }, async () => {
    const cfg = config('voting', 'isolated', { steps: 2, lr: 5e-3 });
    const straight = new Trainer({ gpu, model, tokenizer, tasks, config: cfg });
    await straight.trainStep();
    await straight.trainStep();
    const want = await straight.saveState();
    await straight.release();

    const first = new Trainer({ gpu, model, tokenizer, tasks, config: cfg });
    await first.trainStep();
    const mid = await first.saveState();
    await first.release();
    const resumed = new Trainer({ gpu, model, tokenizer, tasks, config: cfg });
    await resumed.loadState(mid);
    expect(resumed.step).toBe(1);
    await resumed.trainStep();
    const got = await resumed.saveState();
    await resumed.release();
    for (const name of Object.keys(want.adapters)) {
      expect([name, sameBytes(got.adapters[name]!['adapter_model.safetensors'], want.adapters[name]!['adapter_model.safetensors'])]).toEqual([name, true]);
      expect([name, sameBytes(got.optimizers[name]!, want.optimizers[name]!)]).toEqual([name, true]);
    }
    // the step moved the adapters (B starts at zero)
    const init = new Trainer({ gpu, model, tokenizer, tasks, config: cfg });
    const zero = await init.saveState();
    await init.release();
    expect(sameBytes(zero.adapters.generator!['adapter_model.safetensors'], want.adapters.generator!['adapter_model.safetensors'])).toBe(false);
  });

  it('after an update the engine serves the new weights', { timeout: 600_000 }, async () => {
    const trainer = new Trainer({ gpu, model, tokenizer, tasks, config: config('single', 'isolated', { steps: 1, lr: 5e-2, groupSize: 8, sampling: { temperature: 1, topP: 1, maxNewTokens: 40 } }) });
    // Groups of 8 with whole answers: some rewards differ within a group, so the step has a gradient.
    const step = await trainer.trainStep();
    expect(step.adapters.generator!.gradNorm).toBeGreaterThan(0);
    const prompt = tokenizer.encodeChat([{ role: 'user', content: tasks.validation[0]!.prompt }]);
    const r = await trainer.engine.generate('generator', prompt, { maxNewTokens: 8, temperature: 0 });
    const batch = nextTokenBatch([[...prompt, ...r.ids]]);
    const logpOf = async (withAdapter: boolean) => {
      const rows = trainer.adapters.rows(new Array(batch.ids.length).fill(withAdapter ? 'generator' : null));
      const s = tokenLogprobs(model, batch, { adapter: rows });
      rows.release();
      const lp = await gpu.readF32(s.logp);
      s.logp.release();
      s.entropy.release();
      return Array.from(lp.slice(prompt.length - 1, prompt.length - 1 + r.ids.length));
    };
    const trained = await logpOf(true);
    const base = await logpOf(false);
    const err = Math.max(...r.logprobs.map((x, i) => Math.abs(x - trained[i]!)));
    const moved = Math.max(...base.map((x, i) => Math.abs(x - trained[i]!)));
    expect(err).toBeLessThan(2e-3); // f16 KV cache and the decode kernels against the training forward
    expect(moved).toBeGreaterThan(20 * err);
    await trainer.release();
  });

  it('a lost device ends the step with a named error', { timeout: 600_000 }, async () => {
    const own = await Gpu.create();
    const source = new DirectorySource(DEMO_DIR);
    const loaded = await loadQwen3(own, source, { dtype: 'f32' });
    const m = new Qwen3Model(own, loaded.config, loaded.weights);
    const trainer = new Trainer({ gpu: own, model: m, tokenizer, tasks, config: config('single', 'shared', { steps: 2 }) });
    await trainer.trainStep();
    own.destroy();
    await expect(trainer.trainStep()).rejects.toThrow(/device|destroyed|lost/i);
  });
});
