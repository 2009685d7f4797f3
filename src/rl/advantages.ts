// GRPO advantages: each trajectory's outcome reward normalised within its group. Modes: `std`
// A = (r − mean_group) / (std_group + 1e-6) with the unbiased std (GRPO); `mean` A = r − mean_group
// (Dr. GRPO); `none` A = r. A group of one gets A = 0 (`singleton: 'zero'`, the study's default) or, as
// verl treats it (mean 0, std 1), A = r (`singleton: 'reward'`).
// The group key is explicit (task × role slot × turn): workflows set it, nothing derives it from names.

/** Which trajectories are compared with each other. Workflows choose the fields: e.g. Voting gives each
 * generator slot its own roleSlot ("generator0", "generator1", ...), Eval-Opt gives all generator turns
 * turn 0 (one group), Orch-Workers gives all workers one roleSlot ("worker"). */
export interface GroupKey {
  taskId: string;
  roleSlot: string;
  turn: number;
}

export interface Scored {
  key: GroupKey;
  reward: number;
}

export interface Group<T extends Scored> {
  key: GroupKey;
  members: T[];
  /** Indices of the members in the input list. */
  indices: number[];
}

export const ADVANTAGE_EPS = 1e-6;

export class AdvantageError extends Error {
  override name = 'AdvantageError';
}

/** A string that identifies a key exactly (no separator can collide: JSON of the three fields). */
export function groupKeyString(key: GroupKey): string {
  return JSON.stringify([key.taskId, key.roleSlot, key.turn]);
}

function checkKey(key: GroupKey, where: string): void {
  if (typeof key?.taskId !== 'string' || typeof key.roleSlot !== 'string' || !Number.isInteger(key.turn) || key.turn < 0) {
    throw new AdvantageError(`${where}: group key needs {taskId: string, roleSlot: string, turn: integer >= 0}, got ${JSON.stringify(key)}`);
  }
}

/** Groups items by key, groups in first-seen order, members in input order. */
export function groupByKey<T extends Scored>(items: readonly T[]): Group<T>[] {
  const groups = new Map<string, Group<T>>();
  items.forEach((item, i) => {
    checkKey(item.key, `trajectory ${i}`);
    const k = groupKeyString(item.key);
    let g = groups.get(k);
    if (!g) groups.set(k, (g = { key: item.key, members: [], indices: [] }));
    g.members.push(item);
    g.indices.push(i);
  });
  return [...groups.values()];
}

export const ADVANTAGE_MODES = ['std', 'mean', 'none'] as const;
export type AdvantageMode = (typeof ADVANTAGE_MODES)[number];

export interface AdvantageOptions {
  /** Default 'std'. */
  mode?: AdvantageMode;
  /** A group of one: 'zero' (default) or 'reward' (verl: mean 0, std 1, so A = r). */
  singleton?: 'zero' | 'reward';
}

/** Advantages of rewards that form one group. */
export function groupAdvantages(rewards: readonly number[], opts: AdvantageOptions = {}): number[] {
  const mode = opts.mode ?? 'std';
  if (!ADVANTAGE_MODES.includes(mode)) throw new AdvantageError(`unknown advantage mode ${mode} (one of ${ADVANTAGE_MODES.join(', ')})`);
  const n = rewards.length;
  if (mode === 'none') return [...rewards];
  if (n === 1) return [(opts.singleton ?? 'zero') === 'reward' ? rewards[0]! : 0];
  const mean = rewards.reduce((a, b) => a + b, 0) / n;
  if (mode === 'mean') return rewards.map((r) => r - mean);
  const variance = rewards.reduce((a, r) => a + (r - mean) ** 2, 0) / (n - 1);
  const std = Math.sqrt(variance);
  return rewards.map((r) => (r - mean) / (std + ADVANTAGE_EPS));
}

/** GRPO advantages of every item, in input order. */
export function grpoAdvantages(items: readonly Scored[], opts: AdvantageOptions = {}): number[] {
  const out = new Array<number>(items.length);
  items.forEach((item, i) => {
    if (!Number.isFinite(item.reward)) throw new AdvantageError(`trajectory ${i} (${groupKeyString(item.key)}): reward ${item.reward} is not finite`);
  });
  for (const g of groupByKey(items)) {
    const adv = groupAdvantages(g.members.map((m) => m.reward), opts);
    g.indices.forEach((idx, j) => (out[idx] = adv[j]!));
  }
  return out;
}

/** One workflow episode: the task it solved, its outcome reward, and its role turns. */
export interface Episode<T> {
  taskId: string;
  reward: number;
  trajectories: { roleSlot: string; turn: number; data: T }[];
}

/** A trajectory of an episode with its group key, reward (the episode's outcome) and advantage. */
export interface AdvantagedTrajectory<T> extends Scored {
  episode: number;
  data: T;
  advantage: number;
}

/** Flattens episodes into trajectories (every turn gets the episode's outcome reward), grouped by
 * task × role slot × turn, with their GRPO advantages. */
export function episodeAdvantages<T>(episodes: readonly Episode<T>[]): AdvantagedTrajectory<T>[] {
  const items: AdvantagedTrajectory<T>[] = [];
  episodes.forEach((ep, e) => {
    for (const t of ep.trajectories) {
      items.push({ key: { taskId: ep.taskId, roleSlot: t.roleSlot, turn: t.turn }, reward: ep.reward, episode: e, data: t.data, advantage: 0 });
    }
  });
  const adv = grpoAdvantages(items);
  items.forEach((it, i) => (it.advantage = adv[i]!));
  return items;
}
