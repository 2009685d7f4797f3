// Answer normalisation: rewrite a LaTeX/plain answer into a canonical string so that equivalent
// spellings compare equal as text, and the numeric/symbolic checks see clean LaTeX.

import { matchingBrace } from './extract.ts';

/** Words dropped as units when they follow a quantity ("5 cm", "12 \text{ apples}" keeps only the number). */
const UNIT_WORDS = new Set([
  'unit', 'units', 'square', 'sq', 'cubic', 'mm', 'cm', 'km', 'meter', 'meters', 'metre', 'metres',
  'centimeter', 'centimeters', 'millimeter', 'millimeters', 'kilometer', 'kilometers', 'inch', 'inches',
  'foot', 'feet', 'ft', 'yard', 'yards', 'mile', 'miles', 'mph', 'kph', 'second', 'seconds', 'sec', 'secs',
  'minute', 'minutes', 'min', 'mins', 'hour', 'hours', 'hr', 'hrs', 'day', 'days', 'week', 'weeks', 'month',
  'months', 'year', 'years', 'dollar', 'dollars', 'cent', 'cents', 'euro', 'euros', 'pound', 'pounds', 'lb',
  'lbs', 'ounce', 'ounces', 'oz', 'gram', 'grams', 'kg', 'kilogram', 'kilograms', 'mg', 'liter', 'liters',
  'litre', 'litres', 'ml', 'gallon', 'gallons', 'degree', 'degrees', 'radian', 'radians', 'percent',
  'point', 'points', 'way', 'ways', 'people', 'persons', 'students', 'times', 'digits', 'integers',
]);
/** Single letters are units only inside \text{} ("5\text{ m}"), never bare ("5m" may be 5·m). */
const TEXT_UNIT_LETTERS = new Set(['m', 'g', 's', 'h', 'l', 'L', 'K']);

const TEXT_COMMANDS = ['text', 'textbf', 'textit', 'textrm', 'mathrm', 'mathbf', 'mathit', 'mbox', 'operatorname'];

const UNICODE: [RegExp, string][] = [
  [/\u2212/g, '-'], [/π/g, '\\pi '], [/∞/g, '\\infty '], [/×/g, '\\times '], [/·/g, '\\cdot '],
  [/√/g, '\\sqrt'], [/°/g, ''], [/≤/g, '\\le '], [/≥/g, '\\ge '], [/\u00a0/g, ' '],
];

/** Canonical form of one answer. Idempotent: normalizeAnswer(normalizeAnswer(s)) === normalizeAnswer(s). */
export function normalizeAnswer(answer: string): string {
  let s = answer.trim();
  for (const [re, to] of UNICODE) s = s.replace(re, to);
  s = stripMathDelimiters(s);
  s = s.replace(/\\\$/g, '').replace(/\$/g, '');
  s = unwrapCommand(s, 'boxed');
  s = unwrapCommand(s, 'fbox');
  s = s.replace(/\\displaystyle/g, '');
  s = s.replace(/\\(?:left|right)\s*\./g, '').replace(/\\(?:left|right|big|Big|bigg|Bigg)(?![a-zA-Z])/g, '');
  s = s.replace(/\\[dtc]frac(?![a-zA-Z])/g, '\\frac');
  s = s.replace(/\\(?:[,;:! ]|q?quad(?![a-zA-Z]))/g, ' ').replace(/~/g, ' ').replace(/\{,\}/g, '');
  s = s.replace(/\^\s*\{\s*\\circ\s*\}|\^\s*\\circ|\\circ|\\degree/g, '');
  s = s.replace(/\\%|%/g, '');
  s = s.replace(/\\infinity|\binf\b/g, '\\infty').replace(/\\varnothing|\\\{\s*\\\}/g, '\\emptyset');
  s = textGroups(s);
  s = dropUnitWords(s);
  s = dropTrailingWords(s);
  s = collapseSpaces(s);
  s = s.replace(/\\frac([^{\\])([^{\\])/g, '\\frac{$1}{$2}').replace(/\\frac\{([^{}]*)\}([^{\\])/g, '\\frac{$1}{$2}');
  s = s.replace(/\\sqrt([^{[\\])/g, '\\sqrt{$1}');
  s = s.replace(/^[.,;:]+|[.,;:]+$/g, '');
  s = stripVariablePrefix(s);
  if (/^-?\d{1,3}(,\d{3})+(\.\d+)?$/.test(s)) s = s.replace(/,/g, '');
  s = trimTrailingZeros(s);
  const choice = /^\(([A-Ea-e])\)$/.exec(s);
  if (choice) s = choice[1]!.toUpperCase();
  return s;
}

/** `$x$`, `\(x\)`, `\[x\]` -> `x`. */
function stripMathDelimiters(s: string): string {
  const m = /^\\\(([\s\S]*)\\\)$/.exec(s) ?? /^\\\[([\s\S]*)\\\]$/.exec(s);
  return m ? m[1]!.trim() : s;
}

/** `\cmd{body}` -> `body` everywhere (balanced braces). */
function unwrapCommand(s: string, cmd: string): string {
  const needle = `\\${cmd}`;
  for (let at = s.indexOf(needle); at >= 0; at = s.indexOf(needle, at)) {
    let open = at + needle.length;
    if (/[a-zA-Z]/.test(s[open] ?? '')) {
      at = open;
      continue;
    }
    while (s[open] === ' ') open++;
    const close = s[open] === '{' ? matchingBrace(s, open) : -1;
    if (close < 0) {
      at = open;
      continue;
    }
    s = s.slice(0, at) + s.slice(open + 1, close) + s.slice(close + 1);
  }
  return s;
}

/**
 * \text{...}-like groups: a group holding only unit words (after something else) is dropped, "or"/"and"
 * become list separators, any other group is unwrapped (answers like \text{Monday}, \text{(A)}).
 */
function textGroups(s: string): string {
  const re = new RegExp(`\\\\(?:${TEXT_COMMANDS.join('|')})\\s*\\{`, 'g');
  for (let m = re.exec(s); m !== null; m = re.exec(s)) {
    const open = m.index + m[0].length - 1;
    const close = matchingBrace(s, open);
    if (close < 0) break;
    const body = s.slice(open + 1, close).trim();
    const before = s.slice(0, m.index).trim();
    let replacement: string;
    if (/^(or|and)$/i.test(body)) replacement = ',';
    else if (before !== '' && isUnitPhrase(body)) replacement = '';
    else replacement = ` ${body} `;
    let after = close + 1;
    if (replacement === '') after += /^\s*\^\s*\{?\s*[23]\s*\}?/.exec(s.slice(after))?.[0].length ?? 0;
    s = s.slice(0, m.index) + replacement + s.slice(after);
    re.lastIndex = m.index + replacement.length;
  }
  return s;
}

function isUnitPhrase(body: string): boolean {
  const words = body.split(/[\s/.]+/).filter((w) => w !== '');
  return words.length > 0 && words.every((w) => UNIT_WORDS.has(w.toLowerCase()) || TEXT_UNIT_LETTERS.has(w));
}

/** Unit words written bare after a quantity: "5 cm", "12 square units", "30 degrees". */
function dropUnitWords(s: string): string {
  for (let prev = ''; prev !== s; ) {
    prev = s;
    s = s.replace(/(?<![\\a-zA-Z])([a-zA-Z]+)(\s*\^\s*\{?\s*[23]\s*\}?)?(?![a-zA-Z])/g, (word, w: string, _p, offset: number) =>
      UNIT_WORDS.has(w.toLowerCase()) && /[\d}]\s*$/.test(prev.slice(0, offset)) ? '' : word,
    );
  }
  return s;
}

/** Words that are math, not a noun after a quantity ("2 pi" is 2π). */
const MATH_WORDS = new Set(['pi', 'sqrt', 'ln', 'log', 'sin', 'cos', 'tan', 'or', 'and', 'i', 'e']);

/** "5 apples", "12 blue marbles" -> the number: plain words after a lone number are a noun phrase. */
function dropTrailingWords(s: string): string {
  const m = /^\s*([-+]?(?:\d[\d,]*(?:\.\d+)?|\\frac\{[^{}]+\}\{[^{}]+\}))\s+([a-zA-Z]{2,}(?:\s+[a-zA-Z]+)*)\s*$/.exec(s);
  if (!m || m[2]!.split(/\s+/).some((w) => MATH_WORDS.has(w.toLowerCase()))) return s;
  return m[1]!;
}

/** Remove spaces, except the one that keeps a command apart from a following letter (`\pi r`). */
function collapseSpaces(s: string): string {
  return s
    .replace(/(\\[a-zA-Z]+)\s+(?=[a-zA-Z])/g, '$1\u0000')
    .replace(/\s+/g, '')
    .replace(/\u0000/g, ' ');
}

/** `x = 3` -> `3`; `f(x)=...` and `x\in ...` likewise. Only a lone variable on the left, one `=`. */
export function stripVariablePrefix(s: string): string {
  const m = /^([a-zA-Z]|\\[a-zA-Z]+)(_\{?[a-zA-Z0-9]+\}?)?(\([a-zA-Z]\))?(=|\\in(?![a-zA-Z]))([\s\S]+)$/.exec(s);
  if (!m || m[5]!.includes('=')) return s;
  if (m[1]!.startsWith('\\') && !/^\\(alpha|beta|gamma|theta|phi|lambda|mu|omega)$/.test(m[1]!)) return s;
  return m[5]!;
}

/** `2.50` -> `2.5`, `3.0` -> `3` for every decimal literal. */
function trimTrailingZeros(s: string): string {
  return s.replace(/(\d+)\.(\d*?)0+(?!\d)/g, (_m, i: string, f: string) => (f === '' ? i : `${i}.${f}`)).replace(/(\d)\.(?![\d])/g, '$1');
}
