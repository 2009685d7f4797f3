// CPU references of the graders' answer extraction: the plain definitions (a regex scan with a brace
// count per box; a per-line fence regex). Quadratic on hostile text, so the graders use linear scanners
// (src/tasks/math/extract.ts, src/tasks/code/extract.ts), checked against these on random text. Brace
// matching itself is one loop per box and shared with the grader (matchingBrace).
import { matchingBrace } from '../../src/tasks/math/extract.ts';

/** Contents of every balanced \boxed{...} / \fbox{...} (and `\boxed 5`), in order; unbalanced ones skipped. */
export function refBoxedContents(text: string): string[] {
  const found: string[] = [];
  const re = /\\(?:boxed|fbox)\b/g;
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    let i = m.index + m[0].length;
    while (i < text.length && (text[i] === ' ' || text[i] === '\t')) i++;
    if (text[i] === '{') {
      const close = matchingBrace(text, i);
      if (close < 0) continue;
      found.push(text.slice(i + 1, close));
      re.lastIndex = close + 1;
    } else if (i > m.index + m[0].length) {
      const token = /^[^\s$]+/.exec(text.slice(i));
      if (token) found.push(token[0]);
    }
  }
  return found;
}

export function refExtractBoxed(response: string): string | null {
  const end = response.lastIndexOf('</think>');
  const region = end >= 0 ? response.slice(end + '</think>'.length) : response;
  const boxes = refBoxedContents(region);
  return boxes.length > 0 ? boxes[boxes.length - 1]!.trim() : null;
}

const PYTHON_INFO = /^(python3?|py|)$/i;

export function refExtractLastCodeBlock(response: string): string | null {
  const lines = response.replace(/\r\n?/g, '\n').split('\n');
  let open: { fence: string; info: string; start: number } | null = null;
  let last: string | null = null;
  for (let i = 0; i < lines.length; i++) {
    const m = /^\s*(`{3,}|~{3,})\s*([^`\s]*)[^`]*$/.exec(lines[i]!);
    if (!m) continue;
    if (open === null) {
      open = { fence: m[1]!, info: m[2]!, start: i + 1 };
    } else if (m[1]![0] === open.fence[0] && m[1]!.length >= open.fence.length && m[2] === '') {
      if (PYTHON_INFO.test(open.info)) last = lines.slice(open.start, i).join('\n');
      open = null;
    }
  }
  return last;
}
