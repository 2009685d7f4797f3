// Synthetic metrics and samples for the report and app tests: a Voting run (generator, aggregator) of a
// few steps with validation before the first step and at the end, seeded, with hostile text in samples.
import type { MetricsRecord, RoleStepMetrics, RunRecord, SampleRecord, StepRecord, ValidationRecord } from '../../src/metrics/schema.ts';
import { mulberry32 } from '../../src/util/mulberry32.ts';

export const HOSTILE = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned=2">';

export function roleMetrics(r: () => number, scale: number): RoleStepMetrics {
  return {
    turns: 8,
    reward: 0.2 + 0.6 * scale * r(),
    accuracy: 0.1 + 0.8 * scale,
    responseLength: { mean: 100 + 50 * r(), max: 256 },
    truncatedFrac: 0.1 * r(),
    entropy: 1.5 - scale,
    perplexity: 3 + r(),
    logRatio: 0,
    clipFrac: 0.05 * r(),
    clipFracLower: 0.01,
    gradNorm: 0.5 + r(),
    tokens: 900,
    gradMass: 40 * r(),
    formatViolationRate: 0.3 * (1 - scale),
    drift: 0.01,
    advantage: { mean: 0, absMean: 0.7, zeroFrac: 0.2 },
  };
}

export interface Synthetic {
  records: MetricsRecord[];
  samples: SampleRecord[];
}

/** steps training steps; validation at step 0 (accuracy 0.25 / generator 0.3 / aggregator 0.5) and at the end
 * (0.75 / 0.6 / 0.875). */
export function syntheticRun(steps = 6, seed = 7): Synthetic {
  const r = mulberry32(seed);
  const run: RunRecord = {
    type: 'run',
    version: 1,
    startedAt: '2026-12-01T20:00:00.000Z',
    workflow: 'voting',
    policy: 'isolated',
    task: 'math',
    model: 'demo-model <b>bold</b>',
    adapters: { generator: 'generator', aggregator: 'aggregator' },
    config: { steps, groupSize: 4, lr: 1e-5, loraRank: 8, loraAlpha: 16, seed },
    runtime: { name: 'node', adapter: 'SwiftShader', cpuDriver: true },
  };
  const val = (step: number, acc: number, gen: number, agg: number): ValidationRecord => ({
    type: 'validation',
    step,
    time: '2026-12-01T20:00:00.000Z',
    tasks: 8,
    accuracy: acc,
    roles: {
      generator: { turns: 24, accuracy: gen, formatViolationRate: 0.1, responseLength: 120 },
      aggregator: { turns: 8, accuracy: agg, formatViolationRate: 0.2, responseLength: 30 },
    },
  });
  const records: MetricsRecord[] = [run, val(0, 0.25, 0.3, 0.5)];
  const samples: SampleRecord[] = [];
  for (let s = 1; s <= steps; s++) {
    const scale = s / steps;
    const step: StepRecord = {
      type: 'step',
      step: s,
      time: '2026-12-01T20:00:00.000Z',
      reward: 0.3 + 0.5 * scale,
      accuracy: 0.3 + 0.5 * scale,
      episodes: 8,
      trajectories: 32,
      roles: { generator: roleMetrics(r, scale), aggregator: { ...roleMetrics(r, scale), gradNorm: null } },
      adapters: { generator: { gradNorm: 1, clipCoef: 1, skipped: false, lr: 1e-5 } },
      skippedSteps: 0,
      timings: { rolloutMs: 1000 + 100 * r(), rewardMs: 50, updateMs: 800, stepMs: 1900 },
      memory: { liveBytes: 1e8, peakBytes: 2e8 },
    };
    records.push(step);
    for (let e = 0; e < 2; e++) {
      samples.push({
        type: 'sample',
        step: s,
        split: 'train',
        episode: e,
        taskId: `math-${s}-${e}`,
        task: 'What is 6*7? Put the answer in \\boxed{}.',
        reward: e === 0 ? 1 : 0,
        turns: [
          { role: 'generator', slot: 'generator0', turn: 0, prompt: 'Solve: 6*7', response: `6*7 = 42, so \\boxed{42} ${HOSTILE}`, finishReason: 'stop', advantage: 0.5, violation: null },
          { role: 'generator', slot: 'generator1', turn: 0, prompt: 'Solve: 6*7', response: 'It is 41 & <b>not</b> boxed', finishReason: 'length', advantage: -0.5, violation: 'generator-no-answer' },
          { role: 'aggregator', slot: 'aggregator', turn: 0, prompt: `Pick one ${HOSTILE}`, response: 'I pick \\boxed{1}', finishReason: 'stop', advantage: e === 0 ? 1 : -1, violation: e === 0 ? null : 'aggregator-no-boxed-choice' },
        ],
      });
    }
  }
  records.push(val(steps, 0.75, 0.6, 0.875));
  samples.push({
    type: 'sample',
    step: steps,
    split: 'validation',
    episode: 0,
    taskId: 'val-0',
    task: 'What is 2+2?',
    reward: 1,
    turns: [{ role: 'generator', slot: 'generator0', turn: 0, prompt: 'Solve: 2+2', response: '\\boxed{4}', finishReason: 'stop', advantage: null, violation: null }],
  });
  return { records, samples };
}
