import { describe, expect, it } from 'vitest';
import { cosineWithWarmup, ScheduleError } from '../../src/optim/schedule.ts';

describe('cosine schedule with linear warm-up', () => {
  it('the study defaults: 2e-5, 15 warm-up steps, cosine to 0 over 500', () => {
    const lr = cosineWithWarmup({ totalSteps: 500 });
    expect(lr(0)).toBe(0);
    expect(lr(5)).toBeCloseTo((2e-5 * 5) / 15, 15);
    expect(lr(15)).toBeCloseTo(2e-5, 15);
    expect(lr(257)).toBeCloseTo(2e-5 * 0.5 * (1 + Math.cos((Math.PI * 242) / 485)), 15);
    // half-way through the cosine part: half the peak
    expect(cosineWithWarmup({ totalSteps: 515 })(265)).toBeCloseTo(1e-5, 15);
    expect(lr(500)).toBeCloseTo(0, 15);
    expect(lr(600)).toBeGreaterThanOrEqual(0);
    for (let t = 16; t < 500; t++) expect(lr(t)).toBeLessThan(lr(t - 1));
  });

  it('no warm-up starts at the peak; bad arguments are refused', () => {
    expect(cosineWithWarmup({ lr: 1e-3, warmupSteps: 0, totalSteps: 10 })(0)).toBe(1e-3);
    expect(() => cosineWithWarmup({ totalSteps: 0 })).toThrow(ScheduleError);
    expect(() => cosineWithWarmup({ totalSteps: 10 })(-1)).toThrow(/step/);
  });
});
