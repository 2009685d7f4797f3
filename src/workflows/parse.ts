// Parsers of role outputs: final answers (\boxed{}, the last fenced code block), the aggregator's
// choice, the orchestrator's strategies, the evaluator's verdict, and format-violation detectors.
//
// Every parser is linear in its input and safe on hostile text (empty, megabytes, unbalanced braces,
// thousands of boxes): hand-written scanners, and only regexes that cannot backtrack super-linearly.
// The answer extractors agree with the graders (src/tasks/math/extract.ts extractBoxed,
// src/tasks/code/grade.ts extractLastCodeBlock) on every input; the tests check it on random text.
import type { TaskKind } from '../tasks/types.ts';

// ---------------------------------------------------------------------------------------------------
// \boxed{}

/** The text answers are read from: what follows the last `</think>`, else the whole response. */
export function answerRegion(text: string): string {
  const end = text.lastIndexOf('</think>');
  return end >= 0 ? text.slice(end + '</think>'.length) : text;
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
export function boxedAll(text: string): string[] {
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

/** The final \boxed{} answer of a response (last box after any `</think>`), trimmed; null if none. */
export function lastBoxed(text: string): string | null {
  const boxes = boxedAll(answerRegion(text));
  return boxes.length > 0 ? boxes[boxes.length - 1]!.trim() : null;
}

// ---------------------------------------------------------------------------------------------------
// Fenced code

interface Fence {
  char: number;
  len: number;
  info: string;
}

/** A fence line as the code grader reads one: spaces, >= 3 backticks or tildes, an info word, no other backtick. */
function fenceOf(line: string): Fence | null {
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

function fencedBlocks(text: string): { info: string; body: string }[] {
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
export function lastCodeBlock(text: string): string | null {
  const blocks = fencedBlocks(text);
  for (let i = blocks.length - 1; i >= 0; i--) if (PYTHON_INFO.test(blocks[i]!.info)) return blocks[i]!.body;
  return null;
}

/** The gradable answer of a solving role's response: the last box (math) or the last Python block (code). */
export function extractAnswer(kind: TaskKind, text: string): string | null {
  return kind === 'math' ? lastBoxed(text) : lastCodeBlock(text);
}

/** True when `text` has a fence line (``` or ~~~, open or closed) or a Python `def name(`. */
export function hasCode(text: string): boolean {
  const lines = text.split('\n');
  for (const l of lines) if (fenceOf(l) !== null) return true;
  return /\bdef\s+[A-Za-z_]\w*\s*\(/.test(text);
}

// ---------------------------------------------------------------------------------------------------
// Aggregator choice

export type ChoiceParse = 'boxed' | 'digit' | 'default';

export interface Choice {
  /** 0-based candidate index. */
  index: number;
  parsedBy: ChoiceParse;
}

/**
 * The aggregator's pick among `candidates` solutions: the last box when it holds an integer N with
 * 1 <= N <= candidates ('boxed'); else the first digit 1-9 of the answer region when it names a
 * candidate ('digit'); else candidate 1 ('default').
 */
export function parseChoice(text: string, candidates: number): Choice {
  if (!Number.isInteger(candidates) || candidates < 1) throw new RangeError(`parseChoice: candidates must be a positive integer, got ${candidates}`);
  const region = answerRegion(text);
  const boxes = boxedAll(region);
  if (boxes.length > 0) {
    const n = boxedInteger(boxes[boxes.length - 1]!);
    if (n !== null && n >= 1 && n <= candidates) return { index: n - 1, parsedBy: 'boxed' };
  }
  const m = /[1-9]/.exec(region);
  if (m) {
    const d = Number(m[0]);
    if (d <= candidates) return { index: d - 1, parsedBy: 'digit' };
  }
  return { index: 0, parsedBy: 'default' };
}

/** A box's content as a plain integer (`3`, ` 3 `, `\text{3}`), or null. */
function boxedInteger(content: string): number | null {
  const s = unwrapText(content);
  return /^\d{1,6}$/.test(s) ? Number(s) : null;
}

/** Trimmed content with one `\text{}`-like wrapper and trailing `.` removed (short contents only). */
function unwrapText(content: string): string {
  let s = content.trim();
  if (s.length > 64) return s;
  const m = /^\\(?:text|textbf|mathrm|mathbf|texttt)\s*\{([^{}]*)\}$/.exec(s);
  if (m) s = m[1]!.trim();
  if (s.endsWith('.')) s = s.slice(0, -1).trim();
  return s;
}

// ---------------------------------------------------------------------------------------------------
// Evaluator verdict

export type Verdict = 'correct' | 'incorrect' | 'none';

/** A box's content as a verdict (`Correct`, `incorrect`, `\text{Correct}`), or null. */
export function verdictOfBox(content: string): 'correct' | 'incorrect' | null {
  const s = unwrapText(content).toLowerCase();
  return s === 'correct' ? 'correct' : s === 'incorrect' ? 'incorrect' : null;
}

/** The evaluator's verdict: its last \boxed{Correct} / \boxed{Incorrect} (any case), or 'none'. */
export function parseVerdict(text: string): Verdict {
  const boxes = boxedAll(answerRegion(text));
  for (let i = boxes.length - 1; i >= 0; i--) {
    const v = verdictOfBox(boxes[i]!);
    if (v) return v;
  }
  return 'none';
}

// ---------------------------------------------------------------------------------------------------
// Orchestrator strategies

export type StrategyParse = 'strategy' | 'numbered' | 'lines' | 'none';

export interface Strategies {
  /** At most `max` strategies, each trimmed and capped at STRATEGY_CAP characters; empty when parsedBy is 'none'. */
  strategies: string[];
  parsedBy: StrategyParse;
}

/** Longest strategy handed to a worker. */
export const STRATEGY_CAP = 400;

function cleanStrategy(s: string): string {
  // Markdown decoration around a strategy: **bold**, leading '-', '#', ':' left over.
  let t = s.trim();
  let a = 0;
  let b = t.length;
  while (a < b && '*#-:_ \t'.includes(t[a]!)) a++;
  while (b > a && '*_ \t'.includes(t[b - 1]!)) b--;
  t = t.slice(a, b).trim();
  return t.length > STRATEGY_CAP ? t.slice(0, STRATEGY_CAP).trimEnd() : t;
}

/**
 * The orchestrator's strategies: the texts after `STRATEGY k:` markers (any case, `**` allowed around
 * the marker, each up to the next marker), ordered by k; else the items of a numbered list (`1.` / `1)`
 * at a line start, the rest of that line); else the lines longer than 10 characters; at most `max`.
 */
export function parseStrategies(text: string, max = 3): Strategies {
  const region = answerRegion(text);
  const marks: { k: number; at: number; textStart: number }[] = [];
  const re = /strategy[ \t]*(\d{1,4})[ \t]*(?:\*+[ \t]*)?[:.)]/gi;
  for (let m = re.exec(region); m !== null; m = re.exec(region)) {
    marks.push({ k: Number(m[1]), at: m.index, textStart: m.index + m[0].length });
  }
  const fromMarks = marks
    .map((m, i) => ({ k: m.k, i, s: cleanStrategy(region.slice(m.textStart, i + 1 < marks.length ? marks[i + 1]!.at : region.length)) }))
    .filter((x) => x.s !== '')
    .sort((x, y) => x.k - y.k || x.i - y.i)
    .map((x) => x.s);
  if (fromMarks.length > 0) return { strategies: fromMarks.slice(0, max), parsedBy: 'strategy' };

  const lines = region.split('\n');
  const numbered: string[] = [];
  for (const line of lines) {
    const m = /^[ \t]*\**(\d{1,3})[.)]/.exec(line);
    if (!m) continue;
    const s = cleanStrategy(line.slice(m[0].length));
    if (s !== '') numbered.push(s);
    if (numbered.length >= max) break;
  }
  if (numbered.length > 0) return { strategies: numbered, parsedBy: 'numbered' };

  const long: string[] = [];
  for (const line of lines) {
    const t = line.trim();
    if (t.length > 10) long.push(cleanStrategy(t));
    if (long.length >= max) break;
  }
  if (long.length > 0) return { strategies: long, parsedBy: 'lines' };
  return { strategies: [], parsedBy: 'none' };
}

// ---------------------------------------------------------------------------------------------------
// Format violations (kinds recorded in EpisodeOutcome.violations)

export const VIOLATION_KINDS = {
  aggregatorNoBoxedChoice: 'aggregator-no-boxed-choice',
  evaluatorNoVerdict: 'evaluator-no-verdict',
  evaluatorWroteCode: 'evaluator-wrote-code',
  evaluatorWroteSolution: 'evaluator-wrote-solution',
  orchestratorSolved: 'orchestrator-solved',
  orchestratorNoStrategyLines: 'orchestrator-no-strategy-lines',
  orchestratorNoStrategies: 'orchestrator-no-strategies',
  /** `${role}-no-answer` for the solving roles: generator, worker, synthesizer. */
  generatorNoAnswer: 'generator-no-answer',
  workerNoAnswer: 'worker-no-answer',
  synthesizerNoAnswer: 'synthesizer-no-answer',
} as const;

/** The aggregator did not answer `\boxed{N}` with 1 <= N <= candidates (its last box). */
export function aggregatorViolations(text: string, candidates: number): string[] {
  return parseChoice(text, candidates).parsedBy === 'boxed' ? [] : [VIOLATION_KINDS.aggregatorNoBoxedChoice];
}

/** Evaluator: no verdict; code (a fence line or a `def name(`); a solution (a box that is not a verdict). */
export function evaluatorViolations(text: string): string[] {
  const out: string[] = [];
  if (parseVerdict(text) === 'none') out.push(VIOLATION_KINDS.evaluatorNoVerdict);
  if (hasCode(text)) out.push(VIOLATION_KINDS.evaluatorWroteCode);
  if (boxedAll(answerRegion(text)).some((b) => verdictOfBox(b) === null)) out.push(VIOLATION_KINDS.evaluatorWroteSolution);
  return out;
}

/** Orchestrator: solved instead of planning (a box or code in its output); strategies not in `STRATEGY k:` form; none at all. */
export function orchestratorViolations(text: string, parsed: Strategies = parseStrategies(text)): string[] {
  const out: string[] = [];
  if (boxedAll(answerRegion(text)).length > 0 || hasCode(text)) out.push(VIOLATION_KINDS.orchestratorSolved);
  if (parsed.parsedBy === 'numbered' || parsed.parsedBy === 'lines') out.push(VIOLATION_KINDS.orchestratorNoStrategyLines);
  if (parsed.parsedBy === 'none') out.push(VIOLATION_KINDS.orchestratorNoStrategies);
  return out;
}
