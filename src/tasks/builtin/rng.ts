// Seeded randomness for the built-in generators: every task draws from its own stream, derived from
// (seed, stream name, index), so task i is the same whatever the count asked for.

import { hash32 } from '../data/split.ts';

export interface Rng {
  /** Uniform in [0, 1). */
  next(): number;
  /** Integer in [lo, hi] inclusive. */
  int(lo: number, hi: number): number;
  pick<T>(items: readonly T[]): T;
  /** Integer in [lo, hi] other than 0. */
  nonzero(lo: number, hi: number): number;
}

/** mulberry32 seeded by a hash of (seed, stream, index). */
export function taskRng(seed: number, stream: string, index: number): Rng {
  let s = hash32(`${seed}/${stream}/${index}`);
  const next = (): number => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (lo: number, hi: number): number => lo + Math.floor(next() * (hi - lo + 1));
  return {
    next,
    int,
    pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!,
    nonzero(lo, hi) {
      for (;;) {
        const v = int(lo, hi);
        if (v !== 0) return v;
      }
    },
  };
}
