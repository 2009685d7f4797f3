// Final-answer extraction: the last \boxed{...} (or \fbox{...}) of the response, after </think> when present.

/** The text the answer is read from: what follows the last </think>, else the whole response. */
export function answerRegion(response: string): string {
  const end = response.lastIndexOf('</think>');
  return end >= 0 ? response.slice(end + '</think>'.length) : response;
}

/**
 * Contents of every balanced \boxed{...} / \fbox{...} in `text`, in order. `\boxed 5` (a single token
 * after a space) is accepted too. An unbalanced box (a truncated response) is skipped.
 */
export function boxedContents(text: string): string[] {
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
