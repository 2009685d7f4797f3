// Workgroup-count helpers shared by kernel wrappers.
import { GpuLimitError } from '../gpu/errors.ts';

export const MAX_WORKGROUPS = 65535;

/** A 1-D count of workgroups folded into a 2-D grid when it exceeds one dimension's limit. */
export function grid1d(workgroups: number): [number, number] {
  if (workgroups <= MAX_WORKGROUPS) return [Math.max(1, workgroups), 1];
  const y = Math.ceil(workgroups / MAX_WORKGROUPS);
  if (y > MAX_WORKGROUPS) throw new GpuLimitError(`${workgroups} workgroups exceed a 65535² grid`);
  return [MAX_WORKGROUPS, y];
}

export function ceilDiv(a: number, b: number): number {
  return Math.ceil(a / b);
}
