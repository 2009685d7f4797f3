// One end-to-end GRPO step of the Voting workflow with random weights of a released Qwen3 shape (default
// Qwen3-0.6B), timed by phase. The step is what Trainer.trainStep (src/rl/trainer.ts) runs, from the same
// pieces: every episode is the workflow's own program over a RecordingAgent, all of them at once through one
// RolloutEngine (each row with its role's adapter), then rewards, grpoAdvantages and grpoUpdate under the
// study's settings (STUDY_CONFIG: isolated policies, T = 0.7, top-p 1, clip 0.2 / 0.28, dual clip 3,
// seq-mean-token-mean, 8192-token micro-batches, AdamW lr 2e-5, weight decay 0.01, grad norm clipped to 1).
// It is composed here rather than run through a Trainer for two reasons: every call generates exactly its
// token budget (EOS ignored, as bench/rollout.ts does), so PyTorch can do identical work; and rewards vary.
//
// Shape (full): 8 tasks (`What is a + b?`, a two-digit, b one digit: 36 prompt tokens per generator turn) x
// 8 rollouts = 64 episodes; each episode 3 generators (VOTERS, in parallel) and then the aggregator, whose
// prompt holds the three candidates (about 459 tokens: the generated text re-tokenized). 128 new tokens per
// call: 256 sequences (192 generator, 64 aggregator), 32,768 new tokens, about 31.5k + 37.6k = 69k tokens
// (prompt + response) in the update. LoRA r64 / alpha 32 on all seven linears (DEFAULT_LORA), one adapter
// per role type (generator, aggregator). Quick: a tiny random model with the demo model's tokenizer,
// 1 task x 2 rollouts (8 sequences), 4 new tokens per call, LoRA r4 on q/v/down (seconds on a CPU driver).
//
// Rewards: the task's grade (gradeTask, on every candidate as Trainer.rollout grades them) of the chosen
// candidate, plus the share of even token ids in the chosen candidate's response. Random-weight text almost
// never holds a right \boxed{} answer, so the grade alone would be 0 everywhere and every advantage 0; the
// second term makes rewards differ within each group, so the update trains on non-zero advantages. Every turn
// of an episode gets its reward (outcome reward), and advantages are (r - mean) / (std + 1e-6) per task x
// slot (generator0..2, aggregator).
//
// Phases (wall clock; the update ends with a GPU sync; the step timed is the second, after one that compiles
// pipelines, except under --quick, which times its only step):
//   rollout   every episode's turns: tokenization, prefill, decode, sampling, the aggregator prompts
//   reward    grading, rewards and group advantages (Trainer's timings count grading under rollout)
//   update    grpoUpdate: forward + loss + backward of every micro-batch, one AdamW step per adapter
// Rows: grpo_voting_<preset>_{step,rollout,reward,update}_s, _tok_per_s (prompt + response tokens of every
// sequence / step seconds) and _tokens (that count: the PyTorch step's is fixed, so its ratio shows how equal
// the work was), and _prefill_tokens (the prompt tokens troupe's prefills computed: shared full pages once).
// bench/torch/bench_grpo.py writes the same names but the last; a ratio above 1 of an _s row means troupe is slower.
import type { Gpu } from '../src/gpu/gpu.ts';
import { DEMO_MODEL, resolveModelDir } from '../src/cli/model-args.ts';
import type { Qwen3Config } from '../src/model/config.ts';
import { AdapterSet, DEFAULT_LORA, type LoraConfig, LoraAdapter } from '../src/model/lora.ts';
import { qwen3Preset } from '../src/model/presets.ts';
import { Qwen3Model } from '../src/model/qwen3.ts';
import { DirectorySource } from '../src/model/source.ts';
import { Qwen3Tokenizer } from '../src/model/tokenizer.ts';
import { randomQwen3Weights, releaseQwen3Weights } from '../src/model/weights.ts';
import { AdamW } from '../src/optim/adamw.ts';
import { grpoAdvantages } from '../src/rl/advantages.ts';
import { grpoUpdate } from '../src/rl/grpo-update.ts';
import { STUDY_CONFIG } from '../src/rl/trainer.ts';
import { RecordingAgent, type SamplingConfig, stepSeed, type Trajectory } from '../src/rl/trajectory.ts';
import { type GenerateOptions, type GenerateResult, RolloutEngine } from '../src/rollout/engine.ts';
import { demoProblem } from '../src/tasks/builtin/demo.ts';
import { gradeTask } from '../src/tasks/grade.ts';
import type { Task } from '../src/tasks/types.ts';
import { VOTERS, votingWorkflow } from '../src/workflows/voting.ts';
import type { EpisodeOutcome } from '../src/workflows/types.ts';
import { benchPreset } from './preset.ts';
import { benchRow, type BenchRow } from './results.ts';

interface Plan {
  tasks: number;
  groupSize: number;
  /** New tokens of every call, generators and aggregator alike (the aggregator's cap is 256). */
  newTokens: number;
  lora: LoraConfig;
}

const FULL: Plan = { tasks: 8, groupSize: 8, newTokens: 128, lora: DEFAULT_LORA };
/** Fewer, narrower adapters than the study's: on a CPU driver the per-row LoRA kernels take most of a step. */
const QUICK: Plan = { tasks: 1, groupSize: 2, newTokens: 4, lora: { rank: 4, alpha: 8, targets: ['q_proj', 'v_proj', 'down_proj'] } };
/** A tiny model for --quick over the demo model's tokenizer (519 tokens, vocab_size 576). */
const TINY: Qwen3Config = { ...qwen3Preset('Qwen3-0.6B'), hiddenSize: 64, intermediateSize: 128, numLayers: 2, numHeads: 4, numKvHeads: 2, headDim: 16, vocabSize: 576 };
/** KV room per turn for the chat template and the problem (36 tokens of a generator turn, about 75 of the aggregator's). */
const PROMPT_ALLOWANCE = 128;
const PHASES = ['step', 'rollout', 'reward', 'update'] as const;

/** The engine with EOS ignored on every call: each call generates exactly its maxNewTokens. */
class FixedLengthEngine extends RolloutEngine {
  override generate(role: string, prompt: Parameters<RolloutEngine['generate']>[1], options: GenerateOptions = {}): Promise<GenerateResult> {
    return super.generate(role, prompt, { ...options, ignoreEos: true });
  }
}

/** `What is a + b?` with a two-digit a and a one-digit b, so every generator prompt has the same length. */
function benchTasks(n: number): Task[] {
  return Array.from({ length: n }, (_, k) => {
    const p = demoProblem(10 + k, '+', k % 10);
    return { id: `grpo-bench-${k}`, kind: 'math', prompt: p.prompt, answer: p.answer, source: 'builtin:demo', split: 'train' };
  });
}

interface Episode {
  task: Task;
  outcome: EpisodeOutcome;
  trajectories: Trajectory[];
}

interface StepSeconds {
  step: number;
  rollout: number;
  reward: number;
  update: number;
  /** Prompt + response tokens of every sequence. */
  tokens: number;
  /** Prompt tokens the engine's prefills computed (full pages shared within a group, or by prompts that start alike, are computed once). */
  prefillTokens: number;
}

interface Setup {
  gpu: Gpu;
  model: Qwen3Model;
  engine: RolloutEngine;
  adapters: AdapterSet;
  optimizers: Map<string, AdamW>;
  tasks: Task[];
  plan: Plan;
}

const evenShare = (ids: readonly number[]) => ids.filter((t) => t % 2 === 0).length / ids.length;

/** The grade of the aggregator's pick plus the even-id share of its tokens (see the header). */
async function episodeReward(ep: Episode): Promise<number> {
  const { answers, choice } = ep.outcome;
  const grades = await Promise.all(answers.map((a) => gradeTask(ep.task, a.text, { math: { timeoutMs: STUDY_CONFIG.gradeTimeoutMs } })));
  const index = choice!.index;
  const chosen = ep.trajectories.find((t) => t.slot === answers[index]!.slot)!;
  return grades[index]!.reward + evenShare(chosen.responseIds);
}

async function grpoStep(s: Setup, step: number): Promise<StepSeconds> {
  const { gpu, plan } = s;
  const sampling: SamplingConfig = { temperature: STUDY_CONFIG.sampling.temperature, topP: STUDY_CONFIG.sampling.topP, maxNewTokens: plan.newTokens };
  const seed = stepSeed(STUDY_CONFIG.seed, step);
  const prefilled = s.engine.stats.prefillTokens;
  const t0 = performance.now();
  gpu.phase = 'rollout';
  const episodes = await Promise.all(
    s.tasks.flatMap((task, b) =>
      Array.from({ length: plan.groupSize }, async (_, g): Promise<Episode> => {
        const episode = b * plan.groupSize + g;
        const agent = new RecordingAgent(s.engine, { episode, episodeId: `${step}:${episode}`, taskId: task.id, sampling, seed, adapterOf: (role) => role });
        const outcome = await votingWorkflow.run(task, agent);
        return { task, outcome, trajectories: agent.trajectories.sort((x, y) => x.call - y.call) };
      }),
    ),
  );
  const t1 = performance.now();
  const trajs = episodes.flatMap((ep) => ep.trajectories);
  const short = trajs.find((t) => t.responseIds.length !== plan.newTokens);
  if (short) throw new Error(`benchGrpoStep: a ${short.slot} turn generated ${short.responseIds.length} tokens, not ${plan.newTokens}`);
  const rewards = await Promise.all(episodes.map(episodeReward));
  episodes.forEach((ep, e) => ep.trajectories.forEach((t) => (t.reward = rewards[e]!)));
  const adv = grpoAdvantages(trajs.map((t) => ({ key: { taskId: t.taskId, roleSlot: t.slot, turn: t.turn }, reward: t.reward })), STUDY_CONFIG.advantage);
  trajs.forEach((t, i) => (t.advantage = adv[i]!));
  const t2 = performance.now();
  gpu.phase = 'update';
  const update = await grpoUpdate(gpu, s.model, s.adapters, s.optimizers, trajs, { ...STUDY_CONFIG.update, temperature: sampling.temperature, perRoleGradNorm: false }, STUDY_CONFIG.lr);
  await gpu.sync();
  const t3 = performance.now();
  gpu.phase = '';
  if (update.skipped) throw new Error(`benchGrpoStep: step ${step} had a non-finite gradient`);
  const tokens = trajs.reduce((a, t) => a + t.promptIds.length + t.responseIds.length, 0);
  return { step: (t3 - t0) / 1000, rollout: (t1 - t0) / 1000, reward: (t2 - t1) / 1000, update: (t3 - t2) / 1000, tokens, prefillTokens: s.engine.stats.prefillTokens - prefilled };
}

export async function benchGrpoStep(gpu: Gpu, opts: { quick: boolean; filter?: string; preset?: string }): Promise<BenchRow[]> {
  const { name: presetName, config } = benchPreset('benchGrpoStep', opts, TINY);
  const prefix = `grpo_voting_${presetName.toLowerCase()}`;
  const names = [...PHASES.map((p) => `${prefix}_${p}_s`), `${prefix}_tok_per_s`, `${prefix}_tokens`, `${prefix}_prefill_tokens`];
  if (opts.filter && !names.some((n) => n.includes(opts.filter!))) return [];

  const plan = opts.quick ? QUICK : FULL;
  const tokenizer = opts.quick ? await Qwen3Tokenizer.load(new DirectorySource(resolveModelDir(DEMO_MODEL)), { required: true }) : await Qwen3Tokenizer.load();
  const weights = randomQwen3Weights(gpu, config, 1);
  const model = new Qwen3Model(gpu, config, weights);
  const adapters = new AdapterSet();
  const optimizers = new Map<string, AdamW>();
  votingWorkflow.roles.forEach((role, k) => {
    const adapter = adapters.add(LoraAdapter.create(gpu, role, config, plan.lora, { seed: stepSeed(STUDY_CONFIG.seed, 0, 1000 + k) }));
    optimizers.set(role, new AdamW(gpu, adapter.parameters(), { lr: STUDY_CONFIG.lr, weightDecay: STUDY_CONFIG.weightDecay, maxGradNorm: STUDY_CONFIG.maxGradNorm }, role));
  });
  // Room for every sequence of a step at once. The aggregator's prompt holds the three candidates, whose text
  // re-tokenizes to about as many tokens as were sampled (1.06x for random ids): twice that is the margin.
  const episodes = plan.tasks * plan.groupSize;
  const N = plan.newTokens;
  const kvTokens = episodes * (VOTERS * (PROMPT_ALLOWANCE + N) + (PROMPT_ALLOWANCE + 2 * VOTERS * N + N));
  const kvBytesPerToken = 2 * config.numLayers * config.numKvHeads * config.headDim * (gpu.f16 ? 2 : 4);
  const engine = new FixedLengthEngine(model, tokenizer, { adapters, kvBudgetBytes: kvTokens * kvBytesPerToken });
  for (const role of votingWorkflow.roles) engine.setRole(role, role);
  const setup: Setup = { gpu, model, engine, adapters, optimizers, tasks: benchTasks(plan.tasks), plan };
  try {
    // The first step compiles pipelines and fills the buffer pool. --quick times that one: it checks the
    // path in seconds, not the speed.
    if (!opts.quick) await grpoStep(setup, 0);
    // --profile and --timeline cover the timed step alone.
    if (gpu.profiler) {
      await gpu.profiler.results();
      gpu.profiler.reset();
    }
    gpu.timeline?.reset();
    const t = await grpoStep(setup, 1);
    const values: [number, string][] = [...PHASES.map((p): [number, string] => [t[p], 's']), [t.tokens / t.step, 'tokens/s'], [t.tokens, 'tokens'], [t.prefillTokens, 'tokens']];
    const rows = names.map((n, i) => benchRow(gpu, n, values[i]![0], values[i]![1]));
    // Under --timeline: how much of each phase the GPU worked, and how long it waited for the host.
    for (const p of gpu.timeline ? await gpu.timeline.results() : []) {
      if (p.phase !== 'rollout' && p.phase !== 'update') continue;
      rows.push(benchRow(gpu, `${prefix}_${p.phase}_gpu_busy_s`, p.busyMs / 1000, 's'), benchRow(gpu, `${prefix}_${p.phase}_gpu_idle_s`, p.idleMs / 1000, 's'));
    }
    return rows.filter((r) => !opts.filter || r.name.includes(opts.filter));
  } finally {
    await engine.close();
    for (const o of optimizers.values()) o.release();
    adapters.release();
    model.release();
    releaseQwen3Weights(weights);
  }
}
