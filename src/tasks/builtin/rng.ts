// Seeded randomness for the built-in generators: every task draws from its own stream, derived from
// (seed, stream name, index), so task i is the same whatever the count asked for.

import { mulberry32 } from '../../util/mulberry32.ts';
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
  const next = mulberry32(hash32(`${seed}/${stream}/${index}`));
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
