// Per-role numbers of a step or a validation pass, from graded episodes and the update's token stats.
// Role accuracy means the role's own job: a generator's or worker's solution is right; the aggregator
// picks a right candidate when one exists; the evaluator's verdict matches the truth of the solution it
// judged; the synthesizer's answer (the episode's final) is right. The orchestrator has none.
import type { TrajectoryStats } from '../rl/grpo-update.ts';
import type { Trajectory } from '../rl/trajectory.ts';
import type { EpisodeOutcome, RoleType } from '../workflows/types.ts';
import type { RoleStepMetrics, RoleValidationMetrics } from './schema.ts';

/** One finished, graded episode. */
export interface GradedEpisode {
  taskId: string;
  outcome: EpisodeOutcome;
  /** Episode reward (the final answer's grade). */
  reward: number;
  /** Grade of each entry of outcome.answers. */
  answerGrades: number[];
  trajectories: Trajectory[];
}

interface Ratio {
  hits: number;
  total: number;
}

/** Hits / total of each role's own job over the episodes. */
export function roleAccuracy(episodes: readonly GradedEpisode[]): Partial<Record<RoleType, Ratio>> {
  const out: Partial<Record<RoleType, Ratio>> = {};
  const count = (role: RoleType, hit: boolean) => {
    const r = (out[role] ??= { hits: 0, total: 0 });
    r.total++;
    if (hit) r.hits++;
  };
  for (const ep of episodes) {
    const o = ep.outcome;
    o.answers.forEach((a, i) => {
      if (a.role === 'generator' || a.role === 'worker' || a.role === 'synthesizer') count(a.role, ep.answerGrades[i] === 1);
    });
    if (o.finalRole === 'synthesizer' && !o.answers.some((a) => a.role === 'synthesizer')) count('synthesizer', ep.reward === 1);
    if (o.choice && ep.answerGrades.some((g, i) => g === 1 && o.answers[i]!.role !== 'aggregator')) {
      count('aggregator', ep.answerGrades[o.choice.index] === 1);
    }
    for (const v of o.verdicts ?? []) {
      const truth = ep.answerGrades[v.answer] === 1;
      count('evaluator', v.verdict !== 'none' && (v.verdict === 'correct') === truth);
    }
  }
  return out;
}

function byRole<T extends { role: RoleType }>(items: readonly T[]): Map<RoleType, T[]> {
  const m = new Map<RoleType, T[]>();
  for (const it of items) {
    if (!m.has(it.role)) m.set(it.role, []);
    m.get(it.role)!.push(it);
  }
  return m;
}

const mean = (xs: readonly number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);

function violationCounts(episodes: readonly GradedEpisode[]): Map<RoleType, number> {
  const m = new Map<RoleType, number>();
  for (const ep of episodes) for (const v of ep.outcome.violations) m.set(v.role, (m.get(v.role) ?? 0) + 1);
  return m;
}

export function stepRoleMetrics(
  episodes: readonly GradedEpisode[],
  trajs: readonly Trajectory[],
  stats: readonly (TrajectoryStats | null)[],
  gradNorm: Partial<Record<RoleType, number>>,
): Partial<Record<RoleType, RoleStepMetrics>> {
  const acc = roleAccuracy(episodes);
  const violations = violationCounts(episodes);
  const out: Partial<Record<RoleType, RoleStepMetrics>> = {};
  const indexed = trajs.map((t, i) => ({ role: t.role, t, s: stats[i] ?? null }));
  for (const [role, items] of byRole(indexed)) {
    const lengths = items.map((x) => x.t.responseIds.length);
    const trained = items.filter((x) => x.s);
    let tokens = 0;
    let nll = 0;
    let entropy = 0;
    let drift = 0;
    let loss = { tokens: 0, ratio: 0, clipped: 0, dual: 0, ppoKl: 0 };
    for (const { s } of trained) {
      tokens += s!.tokens;
      nll += s!.nllSum;
      entropy += s!.entropySum;
      drift += s!.driftSum;
      if (s!.loss) {
        loss = {
          tokens: loss.tokens + s!.loss.tokens,
          ratio: loss.ratio + s!.loss.ratioSum,
          clipped: loss.clipped + s!.loss.clipped,
          dual: loss.dual + s!.loss.dualClipped,
          ppoKl: loss.ppoKl + s!.loss.ppoKlSum,
        };
      }
    }
    const per = (x: number, n: number) => (n > 0 ? x / n : 0);
    const advs = items.map((x) => x.t.advantage);
    const a = acc[role];
    out[role] = {
      turns: items.length,
      reward: mean(items.map((x) => x.t.reward)),
      accuracy: a && a.total ? a.hits / a.total : null,
      responseLength: { mean: mean(lengths), max: lengths.length ? Math.max(...lengths) : 0 },
      truncatedFrac: items.filter((x) => x.t.finishReason === 'length').length / items.length,
      entropy: per(entropy, tokens),
      perplexity: tokens > 0 ? Math.exp(nll / tokens) : 0,
      // ratio = exp(logp − logp_old): log of the mean ratio, and verl's ppo_kl = mean(logp_old − logp).
      logRatio: loss.tokens > 0 ? 0 - per(loss.ppoKl, loss.tokens) : 0,
      clipFrac: per(loss.clipped, loss.tokens),
      clipFracLower: per(loss.dual, loss.tokens),
      gradNorm: gradNorm[role] ?? null,
      tokens,
      gradMass: trained.reduce((sum, x) => sum + x.s!.tokens * Math.abs(x.t.advantage), 0),
      formatViolationRate: (violations.get(role) ?? 0) / items.length,
      drift: per(drift, tokens),
      advantage: { mean: mean(advs), absMean: mean(advs.map(Math.abs)), zeroFrac: advs.filter((v) => v === 0).length / advs.length },
    };
  }
  return out;
}

export function validationRoleMetrics(episodes: readonly GradedEpisode[]): Partial<Record<RoleType, RoleValidationMetrics>> {
  const acc = roleAccuracy(episodes);
  const violations = violationCounts(episodes);
  const out: Partial<Record<RoleType, RoleValidationMetrics>> = {};
  for (const [role, items] of byRole(episodes.flatMap((e) => e.trajectories))) {
    const a = acc[role];
    out[role] = {
      turns: items.length,
      accuracy: a && a.total ? a.hits / a.total : null,
      formatViolationRate: (violations.get(role) ?? 0) / items.length,
      responseLength: mean(items.map((t) => t.responseIds.length)),
    };
  }
  return out;
}
