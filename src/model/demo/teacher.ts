// The scripted teacher behind the demo model's SFT corpus: an Agent (src/workflows/types.ts) that
// answers every role's TurnRequest of a demo task (src/tasks/builtin/demo.ts) in that role's format.
// Each answering turn first picks a strategy, named by its first word: it works the problem out
// (always right) or guesses (a near miss, mostly). The model it teaches inherits that choice as the
// probability of its first token, and that is what GRPO can find quickly on any machine: the outcome
// reward of a worked-out turn is far higher, whatever the problem, so the preference generalises to
// held-out problems. Running the real workflows with it yields rows whose prompts are exactly the
// workflows' prompts.
//   generator / worker / synthesizer   `Work: 17 + 5 = 10 + 7 + 5 = 10 + 12 = 22.\n\boxed{22}` | `Guess: \boxed{23}`
//   evaluator                          `Verify: <the same steps>.\n\boxed{Correct}` | `Verify: <steps>, not 23.\n\boxed{Incorrect}` | `Guess: \boxed{Correct}`
//   aggregator                         `Compare: \boxed{2}` (a right candidate if any) | `Guess: \boxed{3}` (any)
//   orchestrator                       `STRATEGY 1: ...` lines (3)
import { mulberry32 } from '../../util/mulberry32.ts';
import type { Task } from '../../tasks/types.ts';
import { lastBoxed } from '../../workflows/parse.ts';
import type { Agent, RoleType, TurnReply, TurnRequest } from '../../workflows/types.ts';

export interface TeacherOptions {
  /** Chance a turn works the problem out (`Work:`, `Verify:`, `Compare:`) instead of guessing (`Guess:`) (default 0.3). */
  careful?: number;
  /** The same chance in an Eval-Opt refine turn, after feedback (default 0.5). */
  refineCareful?: number;
  /** Chance a guessed answer is right anyway (default 0.15); a wrong one is a near miss. */
  guessRight?: number;
}

export interface TeacherTurn {
  request: TurnRequest;
  text: string;
}

export class TeacherError extends Error {
  override name = 'TeacherError';
}

export const DEMO_STRATEGIES: Record<'+' | '-', readonly string[]> = {
  '+': ['Add the ones digits first, then the tens.', 'Count up from the larger number.', 'Add, then check the sum by subtracting.'],
  '-': ['Subtract the ones digits first, then the tens.', 'Count down from the first number.', 'Subtract, then check by adding back.'],
};

const PROBLEM = /What is (\d+) ([+-]) (\d+)\?/;

/** a, op, b of a demo problem text. */
export function parseDemoProblem(text: string): { a: number; op: '+' | '-'; b: number; value: number } {
  const m = PROBLEM.exec(text);
  if (!m) throw new TeacherError(`not a demo problem: ${JSON.stringify(text.slice(0, 80))}`);
  const [a, b] = [Number(m[1]), Number(m[3])];
  const op = m[2] as '+' | '-';
  return { a, op, b, value: op === '+' ? a + b : a - b };
}

/**
 * The worked-out computation, step by step through the tens: `17 + 5 = 10 + 7 + 5 = 10 + 12 = 22`,
 * `23 - 5 = 10 + 13 - 5 = 10 + 8 = 18`, or `7 + 5 = 12` for one-digit a. Each step is a small table
 * that the train split covers, so a tiny model that works a held-out problem out is right far more
 * often than one that guesses it (a one-digit step written as `0 + 7 + 5 = 0 + 12` measured worse).
 */
export function workedSteps(p: { a: number; op: string; b: number; value: number }): string {
  const head = `${p.a} ${p.op} ${p.b}`;
  if (p.a < 10) return `${head} = ${p.value}`;
  let tens = p.a - (p.a % 10);
  let ones = p.a % 10;
  if (p.op === '-' && ones < p.b) [tens, ones] = [tens - 10, ones + 10];
  const rest = p.op === '+' ? ones + p.b : ones - p.b;
  return `${head} = ${tens} + ${ones} ${p.op} ${p.b} = ${tens} + ${rest} = ${p.value}`;
}

/** The teacher's worked-out solving turn: the steps, then the boxed value. */
export function workedText(p: { a: number; op: string; b: number; value: number }): string {
  return `Work: ${workedSteps(p)}.\n\\boxed{${p.value}}`;
}

/** The teacher's guessed solving turn: only the boxed value. */
export function guessedText(answer: number | string): string {
  return `Guess: \\boxed{${answer}}`;
}

/** Blocks of `--- Solution i ---` in a prompt, in order: the boxed answer of each (null when none). */
function candidateAnswers(content: string): (string | null)[] {
  const parts = content.split(/--- Solution \d+ ---\n/).slice(1);
  return parts.map((p) => lastBoxed(p));
}

export class DemoTeacher implements Agent {
  private readonly rand: () => number;
  private readonly o: Required<TeacherOptions>;
  private readonly p: ReturnType<typeof parseDemoProblem>;
  /** Every turn answered, in order. */
  readonly turns: TeacherTurn[] = [];

  constructor(task: Task, seed: number, opts: TeacherOptions = {}) {
    this.p = parseDemoProblem(task.prompt);
    if (task.answer !== undefined && String(this.p.value) !== task.answer) throw new TeacherError(`task ${task.id}: answer ${task.answer}, the teacher computes ${this.p.value}`);
    this.rand = mulberry32(seed >>> 0);
    this.o = { careful: 0.3, refineCareful: 0.5, guessRight: 0.15, ...opts };
  }

  private chance(p: number): boolean {
    return this.rand() < p;
  }

  private pickOne<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.rand() * xs.length)]!;
  }

  /** A guess: right with probability guessRight, else a near miss (never negative). */
  private guess(): number {
    const v = this.p.value;
    if (this.chance(this.o.guessRight)) return v;
    return v + this.pickOne([-10, -2, -1, 1, 1, 2, 10].filter((d) => v + d >= 0));
  }

  private solve(careful: number): string {
    return this.chance(careful) ? workedText(this.p) : guessedText(this.guess());
  }

  private reply(role: RoleType, content: string): string {
    const p = this.p;
    const right = String(p.value);
    switch (role) {
      case 'generator':
        return this.solve(content.startsWith('Improve your solution') ? this.o.refineCareful : this.o.careful);
      case 'worker':
        return this.solve(this.o.careful);
      case 'evaluator': {
        const at = content.lastIndexOf('\nSolution:\n');
        const shown = at >= 0 ? lastBoxed(content.slice(at)) : null;
        if (shown === null) return '\\boxed{Incorrect} There is no boxed answer.';
        const expr = workedSteps(p);
        if (this.chance(this.o.careful)) return shown === right ? `Verify: ${expr}.\n\\boxed{Correct}` : `Verify: ${expr}, not ${shown}.\n\\boxed{Incorrect}`;
        return `Guess: \\boxed{${this.chance(0.5) ? 'Correct' : 'Incorrect'}}`;
      }
      case 'aggregator': {
        const cands = candidateAnswers(content);
        if (!cands.length) throw new TeacherError('aggregator prompt without --- Solution i --- blocks');
        const good = cands.flatMap((c, i) => (c === right ? [i + 1] : []));
        const any = Math.floor(this.rand() * cands.length) + 1;
        if (this.chance(this.o.careful)) return `Compare: \\boxed{${good.length ? this.pickOne(good) : any}}`;
        return `Guess: \\boxed{${any}}`;
      }
      case 'orchestrator':
        return DEMO_STRATEGIES[p.op].map((s, i) => `STRATEGY ${i + 1}: ${s}`).join('\n');
      case 'synthesizer': {
        if (this.chance(this.o.careful)) return workedText(p);
        const cands = candidateAnswers(content).filter((c): c is string => c !== null && /^\d+$/.test(c));
        return guessedText(cands.length ? this.pickOne(cands) : this.guess());
      }
    }
  }

  async turn(req: TurnRequest): Promise<TurnReply> {
    const content = req.messages.at(-1)?.content ?? '';
    const text = this.reply(req.role, content);
    this.turns.push({ request: req, text });
    return { text, finishReason: 'stop' };
  }
}
