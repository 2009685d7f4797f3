// The shape of a normalised answer: a set or list (order-free), a union of intervals (order-free),
// a bracketed tuple/interval/point (ordered; brackets must match), or a single expression.

import { stripVariablePrefix } from './normalize.ts';

export type Answer =
  | { kind: 'leaf'; text: string }
  | { kind: 'unordered'; items: Answer[] } // {1,2}, "1, 2", "x=1 or x=2"
  | { kind: 'union'; items: Answer[] } // (-\infty,1)\cup(2,\infty)
  | { kind: 'bracketed'; open: string; close: string; items: Answer[] }; // (1,2), [0,1), (a, b, c)

const OPENERS = '([{';
const CLOSERS = ')]}';

/** Split at top-level occurrences of `sep` (outside (), [], {} and \{ \}). */
export function splitTopLevel(s: string, sep: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c === '\\') {
      if (s[i + 1] === '{' || s[i + 1] === '}') depth += s[i + 1] === '{' ? 1 : -1;
      if (depth === 0 && s.startsWith(sep, i)) {
        parts.push(s.slice(start, i));
        start = i + sep.length;
        i += sep.length - 1;
        continue;
      }
      i++;
      continue;
    }
    if (OPENERS.includes(c)) depth++;
    else if (CLOSERS.includes(c)) depth--;
    else if (depth === 0 && s.startsWith(sep, i)) {
      parts.push(s.slice(start, i));
      start = i + sep.length;
      i += sep.length - 1;
    }
  }
  parts.push(s.slice(start));
  return parts;
}

/** True when `inner` is balanced on its own (so the outer pair really encloses the whole answer). */
function balanced(inner: string): boolean {
  let depth = 0;
  for (let i = 0; i < inner.length; i++) {
    const c = inner[i]!;
    if (c === '\\') {
      i++;
      continue;
    }
    if (OPENERS.includes(c)) depth++;
    else if (CLOSERS.includes(c) && --depth < 0) return false;
  }
  return depth === 0;
}

export function parseAnswer(s: string): Answer {
  const union = splitTopLevel(s, '\\cup');
  if (union.length > 1) return { kind: 'union', items: union.map(parseAnswer) };
  if (s.startsWith('\\{') && s.endsWith('\\}') && balancedEscaped(s.slice(2, -2))) {
    const items = splitTopLevel(s.slice(2, -2), ',').map((x) => parseAnswer(stripVariablePrefix(x)));
    return items.length === 1 ? items[0]! : { kind: 'unordered', items };
  }
  const open = s[0] ?? '';
  const close = s[s.length - 1] ?? '';
  if ('(['.includes(open) && ')]'.includes(close) && s.length > 2 && balanced(s.slice(1, -1))) {
    const parts = splitTopLevel(s.slice(1, -1), ',');
    if (parts.length > 1) return { kind: 'bracketed', open, close, items: parts.map(parseAnswer) };
  }
  const list = splitTopLevel(s, ',').filter((x) => x !== '');
  if (list.length > 1) return { kind: 'unordered', items: list.map((x) => parseAnswer(stripVariablePrefix(x))) };
  return { kind: 'leaf', text: s };
}

/** `\{`/`\}` pairs balance inside a set body (so `\{1\}\cup\{2\}` is not one set). */
function balancedEscaped(inner: string): boolean {
  let depth = 0;
  for (let i = 0; i < inner.length - 1; i++) {
    if (inner[i] !== '\\') continue;
    if (inner[i + 1] === '{') depth++;
    else if (inner[i + 1] === '}' && --depth < 0) return false;
    i++;
  }
  return depth === 0 && balanced(inner);
}
