// Deterministic train/validation split: a task's split is a hash of (seed, task id) only, so adding,
// removing or reordering other rows never moves it.

import type { Split } from '../types.ts';

/** FNV-1a over UTF-16 code units, then a murmur3 finaliser so nearby ids spread over [0, 2^32). */
export function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** 'validation' for about `valFraction` of ids, chosen by (seed, id). */
export function splitOf(seed: number, id: string, valFraction: number): Split {
  if (!(valFraction >= 0 && valFraction <= 1)) throw new RangeError(`split: valFraction must be in [0, 1], got ${valFraction}`);
  return hash32(`${seed}\u0000${id}`) / 2 ** 32 < valFraction ? 'validation' : 'train';
}

/** A short stable id for rows without one: a hash of their content. */
export function contentId(prefix: string, text: string): string {
  return `${prefix}-${hash32(text).toString(16).padStart(8, '0')}${hash32(`salt:${text}`).toString(16).padStart(8, '0')}`;
}
