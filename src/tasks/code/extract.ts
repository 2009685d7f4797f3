// The code answer of a response: the body of the last complete fenced block tagged python/py/python3 or
// untagged. Linear in the response (no backtracking regex on hostile lines); test/ref/extract.ts keeps the
// plain regex definition it is checked against.
import { isSpaceCode } from '../math/extract.ts';

interface Fence {
  char: number;
  len: number;
  info: string;
}

/** A fence line as the code grader reads one: spaces, >= 3 backticks or tildes, an info word, no other backtick. */
export function fenceOf(line: string): Fence | null {
  let i = 0;
  while (i < line.length && isSpaceCode(line.charCodeAt(i))) i++;
  const ch = line.charCodeAt(i);
  if (ch !== 0x60 && ch !== 0x7e) return null;
  let j = i;
  while (j < line.length && line.charCodeAt(j) === ch) j++;
  if (j - i < 3) return null;
  if (line.indexOf('`', j) >= 0) return null;
  let k = j;
  while (k < line.length && isSpaceCode(line.charCodeAt(k))) k++;
  let e = k;
  while (e < line.length && !isSpaceCode(line.charCodeAt(e))) e++;
  return { char: ch, len: j - i, info: line.slice(k, e) };
}

const PYTHON_INFO = /^(?:python3?|py|)$/i;

export function fencedBlocks(text: string): { info: string; body: string }[] {
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  const blocks: { info: string; body: string }[] = [];
  let open: (Fence & { start: number }) | null = null;
  for (let i = 0; i < lines.length; i++) {
    const f = fenceOf(lines[i]!);
    if (!f) continue;
    if (open === null) open = { ...f, start: i + 1 };
    else if (f.char === open.char && f.len >= open.len && f.info === '') {
      blocks.push({ info: open.info, body: lines.slice(open.start, i).join('\n') });
      open = null;
    }
  }
  return blocks;
}

/** The body of the last complete fenced block tagged python/py/python3 or untagged, or null (the code grader's rule). */
export function extractLastCodeBlock(text: string): string | null {
  const blocks = fencedBlocks(text);
  for (let i = blocks.length - 1; i >= 0; i--) if (PYTHON_INFO.test(blocks[i]!.info)) return blocks[i]!.body;
  return null;
}

