// Helpers every workflow shares: the problem text a role sees, the answer format line of each task
// kind, candidate clipping (so a huge output cannot blow up the next role's prompt), and the
// format-violation checks on solving roles' outputs.
import type { ChatMessage } from '../model/tokenizer.ts';
import type { Task, TaskKind } from '../tasks/types.ts';
import { answerRegion, extractAnswer } from './parse.ts';
import type { FormatViolation, RoleType } from './types.ts';

/** The problem as a role sees it: the task's prompt, plus the starter code of a code task. */
export function problemText(task: Task): string {
  const p = task.prompt.trim();
  if (task.kind === 'code' && task.starterCode && task.starterCode.trim() !== '') {
    return `${p}\n\nStart from:\n\`\`\`python\n${task.starterCode.trimEnd()}\n\`\`\``;
  }
  return p;
}

/** The answer-format instruction of a solving turn (generator, worker, synthesizer). */
export const ANSWER_FORMAT: Record<TaskKind, string> = {
  math: 'Put the final answer in \\boxed{}.',
  code: 'Put the final code in one ```python block.',
};

/** The one-line instruction of a plain solving turn (single agent, Voting and Eval-Opt generators). */
export const SOLVE: Record<TaskKind, string> = {
  math: `Solve step by step. ${ANSWER_FORMAT.math}`,
  code: `Write a Python solution. ${ANSWER_FORMAT.code}`,
};

/** Longest candidate text shown to another role (evaluator, aggregator, synthesizer, refine turn). */
export const CANDIDATE_CAP = 3000;
/** Longest critique shown to a refining generator. */
export const FEEDBACK_CAP = 1500;
/** The marker that replaces the middle of a clipped text. */
export const CLIP_MARKER = '\n[...]\n';

/**
 * `text`, trimmed, or its head (a third of `max`) and tail (the rest) around CLIP_MARKER when it is
 * longer than `max` characters: the tail keeps a solution's final answer or last code block.
 * Never splits a UTF-16 surrogate pair.
 */
export function clip(text: string, max = CANDIDATE_CAP): string {
  const t = text.trim();
  if (t.length <= max) return t;
  let head = Math.floor(max / 3);
  let tailStart = t.length - (max - head);
  if (isLowSurrogate(t.charCodeAt(head))) head--;
  if (isLowSurrogate(t.charCodeAt(tailStart))) tailStart++;
  return t.slice(0, head) + CLIP_MARKER + t.slice(tailStart);
}

function isLowSurrogate(c: number): boolean {
  return c >= 0xdc00 && c <= 0xdfff;
}

/** A candidate as another role sees it: its answer region (after any `</think>`), clipped. */
export function shownCandidate(text: string, max = CANDIDATE_CAP): string {
  return clip(answerRegion(text), max);
}

/** One user message: troupe's prompts are system-less, one user message per turn. */
export function user(content: string): ChatMessage[] {
  return [{ role: 'user', content }];
}

/** `--- Solution i ---` blocks (1-based), each candidate shown by shownCandidate, with optional per-block extra lines. */
export function solutionBlocks(texts: readonly string[], extra?: readonly string[]): string {
  return texts
    .map((t, i) => {
      const head = `--- Solution ${i + 1} ---`;
      const note = extra?.[i] ? `\n${extra[i]}` : '';
      return `${head}${note}\n${shownCandidate(t)}`;
    })
    .join('\n\n');
}

/**
 * A `<role>-no-answer` violation when a solving role's output has no gradable answer. `occurrence`:
 * which of the slot's calls with this turn index it was (0-based, call order).
 */
export function noAnswerViolation(kind: TaskKind, role: RoleType, slot: string, turn: number, occurrence: number, text: string): FormatViolation[] {
  return extractAnswer(kind, text) === null ? [{ role, slot, turn, occurrence, kind: `${role}-no-answer` }] : [];
}
