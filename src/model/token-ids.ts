// Token ids entering troupe as numbers (CLI lists, tokenizer output, datasets) are checked here before
// they become a Uint32Array: a cast wraps 2^32 to 0 silently, so past that point a wrapped id looks
// like a valid one. Errors name the id, its position and the vocabulary size.

export class TokenIdError extends Error {
  override name = 'TokenIdError';
}

/** The largest id a u32 holds, plus one. */
export const U32_LIMIT = 2 ** 32;

/** Index of the first id that is not an integer in [0, vocab), or -1. */
export function firstBadId(ids: ArrayLike<number>, vocab = U32_LIMIT): number {
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i]!;
    if (!Number.isInteger(id) || id < 0 || id >= vocab) return i;
  }
  return -1;
}

/** Throws TokenIdError, naming `where`, the id, its position and the vocabulary, unless every id is an integer in [0, vocab). */
export function checkTokenIds(where: string, ids: ArrayLike<number>, vocab: number): void {
  const i = firstBadId(ids, vocab);
  if (i < 0) return;
  const id = ids[i]!;
  const what = Number.isInteger(id) ? `is outside the vocabulary [0, ${vocab})` : `is not an integer (vocabulary [0, ${vocab}))`;
  throw new TokenIdError(`${where}: token id ${id} at position ${i} ${what}`);
}

/** ids checked against `vocab`, as a Uint32Array (never wrapped). */
export function toTokenIds(where: string, ids: readonly number[] | ArrayLike<number>, vocab: number): Uint32Array {
  checkTokenIds(where, ids, vocab);
  return Uint32Array.from(ids as ArrayLike<number>);
}
