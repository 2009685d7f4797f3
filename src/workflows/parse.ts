// Parsers of role outputs: final answers (\boxed{}, the last fenced code block), the aggregator's
// choice, the orchestrator's strategies, the evaluator's verdict, and format-violation detectors.
//
// Every parser is linear in its input and safe on hostile text (empty, megabytes, unbalanced braces,
// thousands of boxes): hand-written scanners, and only regexes that cannot backtrack super-linearly.
// The answer extractors are the graders' own (src/tasks/math/extract.ts, src/tasks/code/extract.ts), so a
// role's answer is exactly what the grader reads.
import { extractLastCodeBlock, fenceOf } from '../tasks/code/extract.ts';
import { answerRegion, boxedContents as boxedAll, extractBoxed, isSpaceCode } from '../tasks/math/extract.ts';
import type { TaskKind } from '../tasks/types.ts';

export { answerRegion, boxedAll, isSpaceCode };

// ---------------------------------------------------------------------------------------------------
// \boxed{}

/** The final \boxed{} answer of a response (last box after any `</think>`), trimmed; null if none. */
export const lastBoxed = extractBoxed;

// ---------------------------------------------------------------------------------------------------
// Fenced code

/** The body of the last complete fenced block tagged python/py/python3 or untagged, or null (the code grader's rule). */
export const lastCodeBlock = extractLastCodeBlock;

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
