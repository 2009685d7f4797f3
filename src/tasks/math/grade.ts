// Math reward: the response's last \boxed{} against the reference answer, compared as text after
// normalisation, then as numbers (rationals exactly, decimals to a tolerance) on the caller's thread,
// then symbolically in a worker (symbolic-host.ts) that is terminated when the time limit passes.

import type { Grade } from '../types.ts';
import { boxedContents, extractBoxed } from './extract.ts';
import { normalizeAnswer } from './normalize.ts';
import { parseRational, rationalClose, rationalEqual } from './numeric.ts';
import { type Answer, parseAnswer } from './structure.ts';
import { type SymbolicChecker, sharedSymbolicChecker } from './symbolic-host.ts';

export interface MathGradeOptions {
  /**
   * Wall-clock budget for all symbolic checks of one grading call (default 1000 ms), enforced by
   * terminating the checker's worker. Starting a worker (loading compute-engine) is not charged.
   */
  timeoutMs?: number;
  /** The worker that runs symbolic checks (default: one shared by the process, sharedSymbolicChecker()). */
  checker?: SymbolicChecker;
}

/** The reference answer is unusable (empty): a dataset problem, not a model failure. */
export class MathAnswerError extends Error {
  override name = 'MathAnswerError';
}

/** Answers longer than this are compared as text and numbers only (the symbolic engine would stall). */
const MAX_SYMBOLIC_CHARS = 400;

interface Verdict {
  equal: boolean;
  how: string;
}

class Budget {
  private deadline: number;
  constructor(readonly ms: number) {
    this.deadline = Date.now() + ms;
  }
  left(): number {
    return this.deadline - Date.now();
  }
  /** Runs `fn` without charging its time to the budget. */
  async excluding(fn: () => Promise<void>): Promise<void> {
    const t0 = Date.now();
    await fn();
    this.deadline += Date.now() - t0;
  }
}

class SymbolicTimeout extends Error {}

async function leafEqual(a: string, b: string, budget: Budget, checker: SymbolicChecker): Promise<Verdict> {
  if (a === b) return { equal: true, how: 'exact' };
  if (/^[a-zA-Z][a-zA-Z ]+$/.test(a) && a.toLowerCase() === b.toLowerCase()) return { equal: true, how: 'exact (case-insensitive)' };
  const ra = parseRational(a);
  const rb = parseRational(b);
  if (ra && rb) {
    if (rationalEqual(ra, rb)) return { equal: true, how: 'numeric (exact rational)' };
    if ((ra.decimal || rb.decimal) && rationalClose(ra, rb)) {
      return { equal: true, how: 'numeric (decimal within tolerance)' };
    }
    return { equal: false, how: 'numeric' };
  }
  if (a.length > MAX_SYMBOLIC_CHARS || b.length > MAX_SYMBOLIC_CHARS) return { equal: false, how: 'text (too long for symbolic check)' };
  await budget.excluding(() => checker.warm());
  const verdict = await checker.check(a, b, budget.left());
  if (verdict === 'timeout') throw new SymbolicTimeout();
  if (verdict === 'crashed') return { equal: false, how: 'symbolic check crashed its worker' };
  return { equal: verdict === 'equal', how: verdict === 'unparsable' ? 'text (not parsable as math)' : 'symbolic' };
}

/** Order-free match of two item lists: backtracking over a pairwise equality table (lists are short). */
async function matchUnordered(as: Answer[], bs: Answer[], budget: Budget, checker: SymbolicChecker): Promise<Verdict> {
  if (as.length !== bs.length) return { equal: false, how: `element count ${as.length} vs ${bs.length}` };
  const used = new Array<boolean>(bs.length).fill(false);
  const hows = new Set<string>();
  const assign = async (i: number): Promise<boolean> => {
    if (i === as.length) return true;
    for (let j = 0; j < bs.length; j++) {
      if (used[j]) continue;
      const v = await answersEqual(as[i]!, bs[j]!, budget, checker);
      if (!v.equal) continue;
      used[j] = true;
      hows.add(v.how);
      if (await assign(i + 1)) return true;
      used[j] = false;
    }
    return false;
  };
  return (await assign(0)) ? { equal: true, how: `order-free, ${[...hows].join(', ')}` } : { equal: false, how: 'order-free elements' };
}

async function answersEqual(a: Answer, b: Answer, budget: Budget, checker: SymbolicChecker): Promise<Verdict> {
  if (a.kind === 'leaf' && b.kind === 'leaf') return leafEqual(a.text, b.text, budget, checker);
  if (a.kind === 'bracketed' && b.kind === 'bracketed') {
    if (a.open !== b.open || a.close !== b.close) return { equal: false, how: `brackets ${a.open}${a.close} vs ${b.open}${b.close}` };
    if (a.items.length !== b.items.length) return { equal: false, how: `element count ${a.items.length} vs ${b.items.length}` };
    const hows = new Set<string>();
    for (let i = 0; i < a.items.length; i++) {
      const v = await answersEqual(a.items[i]!, b.items[i]!, budget, checker);
      if (!v.equal) return { equal: false, how: `element ${i + 1} differs (${v.how})` };
      hows.add(v.how);
    }
    return { equal: true, how: `ordered, ${[...hows].join(', ')}` };
  }
  if ((a.kind === 'unordered' && b.kind === 'unordered') || (a.kind === 'union' && b.kind === 'union')) {
    return matchUnordered(a.items, b.items, budget, checker);
  }
  return { equal: false, how: `structure ${a.kind} vs ${b.kind}` };
}

const quote = (s: string): string => `"${s.length > 80 ? `${s.slice(0, 77)}...` : s}"`;

/**
 * Reward 1 iff the response's final boxed answer is equivalent to `answer`. Never throws on a bad
 * response (rejects with MathAnswerError on an unusable reference); a symbolic check past the time
 * limit gives reward 0 with a reason.
 */
export async function gradeMath(response: string, answer: string, opts: MathGradeOptions = {}): Promise<Grade> {
  const reference = extractBoxed(answer) ?? answer;
  const ref = normalizeAnswer(reference);
  if (ref === '') throw new MathAnswerError(`math grader: reference answer ${quote(answer)} is empty after normalisation`);
  const boxed = extractBoxed(response);
  if (boxed === null) {
    const reason = response.includes('\\boxed') && boxedContents(response).length === 0 ? 'unbalanced \\boxed{ (truncated response?)' : 'no \\boxed{} answer in the response';
    return { reward: 0, reason };
  }
  const got = normalizeAnswer(boxed);
  if (got === '') return { reward: 0, reason: 'empty \\boxed{}' };
  const budget = new Budget(opts.timeoutMs ?? 1000);
  try {
    const v = await answersEqual(parseAnswer(got), parseAnswer(ref), budget, opts.checker ?? sharedSymbolicChecker());
    return v.equal
      ? { reward: 1, reason: `equal (${v.how}): ${quote(got)} = ${quote(ref)}` }
      : { reward: 0, reason: `not equal (${v.how}): ${quote(got)} vs ${quote(ref)}` };
  } catch (err) {
    if (err instanceof SymbolicTimeout) {
      return { reward: 0, reason: `symbolic check timed out after ${budget.ms} ms: ${quote(got)} vs ${quote(ref)}` };
    }
    throw err;
  }
}
