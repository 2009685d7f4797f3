// Trajectories: every role turn of an episode, as a record the GRPO update trains on. The
// RecordingAgent is the Agent workflows call during rollouts: it binds each turn to its role's policy
// (the engine role is the role type; the engine maps it to an adapter or the base model), samples it
// from its own seeded stream, and records prompt ids, response ids and the rollout's log-probabilities.
import type { GenerateResult, RolloutEngine } from '../rollout/engine.ts';
import type { Agent, RoleType, TurnReply, TurnRequest } from '../workflows/types.ts';

export interface Trajectory {
  /** Index of the episode within its step (or validation pass). */
  episode: number;
  /** Unique within a run: `${step}:${episode}` (validation: `val${step}:${episode}`). */
  episodeId: string;
  taskId: string;
  role: RoleType;
  slot: string;
  turn: number;
  /** Order of the call within its episode (its sampling stream). */
  call: number;
  /** Adapter that produced it (null: the base model, a frozen role). */
  adapter: string | null;
  promptIds: number[];
  responseIds: number[];
  /** log softmax(logits/T) of each response token as the rollout engine sampled it. */
  rolloutLogprobs: number[];
  finishReason: GenerateResult['finishReason'];
  text: string;
  /** The last user message the role saw (for samples and viewers). */
  promptText: string;
  /** Set after grading / advantages. */
  reward: number;
  advantage: number;
  /** Format violation kind of this turn, if any (set from the episode outcome). */
  violation: string | null;
}

export interface SamplingConfig {
  temperature: number;
  topP: number;
  maxNewTokens: number;
}

/** Calls per episode are far below this: streams of different episodes never collide. */
const CALLS_PER_EPISODE = 1024;

/** A 32-bit seed for one step of one run, from the run seed and the step (different per step, fixed per run). */
export function stepSeed(seed: number, step: number, salt = 0): number {
  let h = (seed ^ 0x9e3779b9) >>> 0;
  for (const v of [step, salt]) {
    h = Math.imul(h ^ (v >>> 0), 0x85ebca6b) >>> 0;
    h = (h ^ (h >>> 13)) >>> 0;
    h = Math.imul(h, 0xc2b2ae35) >>> 0;
    h = (h ^ (h >>> 16)) >>> 0;
  }
  return h;
}

export class RecordingAgent implements Agent {
  readonly trajectories: Trajectory[] = [];
  private calls = 0;

  constructor(
    private readonly engine: RolloutEngine,
    private readonly ctx: {
      episode: number;
      episodeId: string;
      taskId: string;
      sampling: SamplingConfig;
      seed: number;
      /** Role type -> adapter name (null: base model), as bound in the engine. */
      adapterOf: (role: RoleType) => string | null;
      signal?: AbortSignal;
    },
  ) {}

  async turn(req: TurnRequest): Promise<TurnReply> {
    // Numbered when called (workflows call in a fixed order), so streams do not depend on timing.
    const call = this.calls++;
    if (call >= CALLS_PER_EPISODE) throw new Error(`episode ${this.ctx.episodeId}: more than ${CALLS_PER_EPISODE} role turns`);
    const { sampling } = this.ctx;
    const maxNewTokens = Math.min(req.maxNewTokens ?? sampling.maxNewTokens, sampling.maxNewTokens);
    const r = await this.engine.generate(req.role, req.messages, {
      maxNewTokens,
      temperature: sampling.temperature,
      topP: sampling.topP,
      seed: this.ctx.seed,
      stream: this.ctx.episode * CALLS_PER_EPISODE + call,
      signal: this.ctx.signal,
    });
    const lastUser = [...req.messages].reverse().find((m) => m.role === 'user');
    this.trajectories.push({
      episode: this.ctx.episode,
      episodeId: this.ctx.episodeId,
      taskId: this.ctx.taskId,
      role: req.role,
      slot: req.slot,
      turn: req.turn,
      call,
      adapter: this.ctx.adapterOf(req.role),
      promptIds: r.promptIds,
      responseIds: r.ids,
      rolloutLogprobs: r.logprobs,
      finishReason: r.finishReason,
      text: r.text,
      promptText: lastUser?.content ?? '',
      reward: 0,
      advantage: 0,
      violation: null,
    });
    return { text: r.text, finishReason: r.finishReason };
  }
}
