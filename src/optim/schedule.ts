// Learning-rate schedule: linear warm-up, then cosine to 0 (transformers' get_cosine_schedule_with_warmup,
// which verl uses): lr(t) = base·t/W for t < W, then base·½(1 + cos(π·(t − W)/(total − W))).
// t is the 0-based index of the optimizer step about to run.

export interface ScheduleOptions {
  lr?: number; // 2e-5
  warmupSteps?: number; // 15
  totalSteps: number;
}

export class ScheduleError extends Error {
  override name = 'ScheduleError';
}

export function cosineWithWarmup(o: ScheduleOptions): (step: number) => number {
  const lr = o.lr ?? 2e-5;
  const warmup = o.warmupSteps ?? 15;
  const total = o.totalSteps;
  if (!(lr > 0)) throw new ScheduleError(`lr must be > 0, got ${lr}`);
  if (!Number.isInteger(warmup) || warmup < 0) throw new ScheduleError(`warmupSteps must be an integer >= 0, got ${warmup}`);
  if (!Number.isInteger(total) || total < 1) throw new ScheduleError(`totalSteps must be a positive integer, got ${total}`);
  return (step: number) => {
    if (!Number.isInteger(step) || step < 0) throw new ScheduleError(`step must be an integer >= 0, got ${step}`);
    if (step < warmup) return (lr * step) / Math.max(1, warmup);
    const progress = (step - warmup) / Math.max(1, total - warmup);
    return lr * Math.max(0, 0.5 * (1 + Math.cos(Math.PI * progress)));
  };
}
