// Final-answer extraction: the last \boxed{...} (or \fbox{...}) of the response, after </think> when present.
// Linear in the response (hand-written scanners): model outputs are hostile, megabytes of `\boxed{` included.
// test/ref/extract.ts keeps the plain quadratic definitions these are checked against.

/** The text the answer is read from: what follows the last </think>, else the whole response. */
export function answerRegion(response: string): string {
  const end = response.lastIndexOf('</think>');
  return end >= 0 ? response.slice(end + '</think>'.length) : response;
}

const BACKSLASH = 0x5c;
const OPEN = 0x7b;
const CLOSE = 0x7d;

function isWordChar(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x5f;
}

const WS = /\s/;
/** What JavaScript's `\s` matches, for one UTF-16 unit. */
export function isSpaceCode(c: number): boolean {
  if (c <= 0x20) return c === 0x20 || (c >= 0x09 && c <= 0x0d);
  if (c < 0xa0) return false;
  return WS.test(String.fromCharCode(c));
}

interface BoxCandidate {
  start: number;
  /** Index of the `{` of a brace box, or -1 for the `\boxed 5` form. */
  open: number;
  /** Start of the `\boxed 5` form's token (after the spaces). */
  tokenStart: number;
}

function boxCandidates(text: string): BoxCandidate[] {
  const out: BoxCandidate[] = [];
  for (let p = text.indexOf('\\'); p >= 0; p = text.indexOf('\\', p + 1)) {
    let end: number;
    if (text.startsWith('boxed', p + 1)) end = p + 6;
    else if (text.startsWith('fbox', p + 1)) end = p + 5;
    else continue;
    if (end < text.length && isWordChar(text.charCodeAt(end))) continue;
    let j = end;
    while (j < text.length && (text.charCodeAt(j) === 0x20 || text.charCodeAt(j) === 0x09)) j++;
    if (j < text.length && text.charCodeAt(j) === OPEN) out.push({ start: p, open: j, tokenStart: -1 });
    else if (j > end) out.push({ start: p, open: -1, tokenStart: j });
  }
  return out;
}

/**
 * Contents of the \boxed{...} / \fbox{...} boxes of `text`, in order, as the math grader finds them:
 * balanced braces (`\{` and `\}` do not count), a box nested in a found box is part of it, an unbalanced
 * box is skipped (boxes inside it still count), and `\boxed 5` (one token after a space) is a box too.
 * One pass for the braces: linear in `text`.
 */
export function boxedContents(text: string): string[] {
  const cands = boxCandidates(text);
  if (cands.length === 0) return [];
  // Close index of every brace-box `{`, from one left-to-right bracket-matching pass. A box `{` is never
  // escaped (it follows a letter or a space), so this pairing equals a depth count started at that `{`.
  const closeOf = new Map<number, number>();
  const isBoxOpen = new Set<number>();
  for (const c of cands) if (c.open >= 0) isBoxOpen.add(c.open);
  if (isBoxOpen.size > 0) {
    const stack: number[] = [];
    for (let i = cands.find((c) => c.open >= 0)!.open; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c === BACKSLASH) i++;
      else if (c === OPEN) stack.push(i);
      else if (c === CLOSE && stack.length > 0) {
        const o = stack.pop()!;
        if (isBoxOpen.has(o)) closeOf.set(o, i);
      }
    }
  }
  const found: string[] = [];
  let skipUntil = 0;
  for (const c of cands) {
    if (c.start < skipUntil) continue;
    if (c.open >= 0) {
      const close = closeOf.get(c.open);
      if (close === undefined) continue;
      found.push(text.slice(c.open + 1, close));
      skipUntil = close + 1;
    } else {
      let e = c.tokenStart;
      while (e < text.length && text.charCodeAt(e) !== 0x24 /* $ */ && !isSpaceCode(text.charCodeAt(e))) e++;
      if (e > c.tokenStart) found.push(text.slice(c.tokenStart, e));
    }
  }
  return found;
}

/** Index of the `}` closing the `{` at `open`, or -1. Escaped braces (`\{`, `\}`) do not count. */
export function matchingBrace(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    const c = text[i];
    if (c === '\\') {
      i++;
      continue;
    }
    if (c === '{') depth++;
    else if (c === '}' && --depth === 0) return i;
  }
  return -1;
}

/** The final answer of a response: the last box in the answer region, or null if there is none. */
export function extractBoxed(response: string): string | null {
  const boxes = boxedContents(answerRegion(response));
  return boxes.length > 0 ? boxes[boxes.length - 1]!.trim() : null;
}
