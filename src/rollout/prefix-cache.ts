// Shares KV pages between sequences whose prompts start alike (the n rollouts of one task, the
// same system prompt across roles). A full page is identified by everything before and in it:
// the adapter (name and version, since its weights shape K/V) and the token ids. Entries hold one
// reference on their page so it outlives the sequence that computed it; least recently used entries
// are dropped when the cache needs pages back.
import type { KvCache } from '../model/kv-cache.ts';

interface Entry {
  page: number;
  parent: string;
  tokens: Uint32Array;
  lastUse: number;
}

export interface PrefixMatch {
  /** Pages already holding the first pages.length * pageSize tokens (retained for the caller). */
  pages: number[];
  /** Key of the last matched page (the parent of the next one). */
  key: string;
}

function hashTokens(parent: string, tokens: ArrayLike<number>): string {
  // FNV-1a over the parent key and the ids; entries also keep the ids, so a collision cannot match.
  let h1 = 0x811c9dc5;
  let h2 = 0x01000193;
  for (let i = 0; i < parent.length; i++) {
    h1 = Math.imul(h1 ^ parent.charCodeAt(i), 16777619) >>> 0;
    h2 = Math.imul(h2 ^ parent.charCodeAt(i), 2246822519) >>> 0;
  }
  for (let i = 0; i < tokens.length; i++) {
    h1 = Math.imul(h1 ^ tokens[i]!, 16777619) >>> 0;
    h2 = Math.imul(h2 ^ (tokens[i]! + 0x9e3779b9), 2246822519) >>> 0;
  }
  return `${h1.toString(36)}.${h2.toString(36)}.${tokens.length}`;
}

export class PrefixCache {
  private readonly entries = new Map<string, Entry>();
  private clock = 0;

  constructor(private readonly kv: KvCache) {}

  get size(): number {
    return this.entries.size;
  }

  /** Longest run of cached full pages at the start of `ids` under `root` (an adapter identity),
   * leaving at least one token uncached so the caller still computes the last position's logits. */
  match(root: string, ids: ArrayLike<number>): PrefixMatch {
    const P = this.kv.pageSize;
    const pages: number[] = [];
    let key = root;
    const full = Math.floor((ids.length - 1) / P);
    for (let i = 0; i < full; i++) {
      const tokens = Array.prototype.slice.call(ids, i * P, (i + 1) * P) as number[];
      const next = hashTokens(key, tokens);
      const e = this.entries.get(next);
      if (!e || e.parent !== key || !e.tokens.every((t, j) => t === tokens[j])) break;
      e.lastUse = ++this.clock;
      pages.push(e.page);
      key = next;
    }
    this.kv.retain(pages);
    return { pages, key };
  }

  /** The keys insert() would give the full pages `from`..`to`-1 of `ids`, whose page `from` follows `fromKey` (a
   * match's key): which pages a prefill will add, and which one a waiting sequence would match next. */
  pageKeys(ids: ArrayLike<number>, from: number, to: number, fromKey: string): string[] {
    const P = this.kv.pageSize;
    const keys: string[] = [];
    let key = fromKey;
    for (let i = from; i < Math.min(to, Math.floor(ids.length / P)); i++) {
      key = hashTokens(key, Array.prototype.slice.call(ids, i * P, (i + 1) * P) as number[]);
      keys.push(key);
    }
    return keys;
  }

  /** Records the full pages of a sequence after `from` (index of the first page not yet cached, whose parent key is
   * `fromKey`); `keys`: their pageKeys(), where the caller has them already. */
  insert(ids: ArrayLike<number>, pages: readonly number[], from: number, fromKey: string, keys = this.pageKeys(ids, from, Infinity, fromKey)): void {
    const P = this.kv.pageSize;
    keys.forEach((key, j) => {
      const i = from + j;
      if (this.entries.has(key)) return;
      this.kv.retain([pages[i]!]);
      const tokens = Uint32Array.from(Array.prototype.slice.call(ids, i * P, (i + 1) * P) as number[]);
      this.entries.set(key, { page: pages[i]!, parent: j ? keys[j - 1]! : fromKey, tokens, lastUse: ++this.clock });
    });
  }

  /** Drops least recently used entries until `pages` pages are free or nothing is left to drop.
   * Only entries no sequence shares can free a page; others just lose their cache reference. */
  evict(pagesWanted: number): void {
    if (this.kv.freePages >= pagesWanted) return;
    const order = [...this.entries].sort((a, b) => a[1].lastUse - b[1].lastUse);
    for (const [k, e] of order) {
      if (this.kv.freePages >= pagesWanted) break;
      this.entries.delete(k);
      this.kv.release([e.page]);
    }
  }

  clear(): void {
    for (const e of this.entries.values()) this.kv.release([e.page]);
    this.entries.clear();
  }
}
