// mulberry32: a small, fast, seeded 32-bit generator, for reproducible CPU-side randomness (task
// generators, doctor's check inputs, test inputs). Not for cryptography.

/** Uniform values in [0, 1), deterministic in seed. */
export function mulberry32(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
