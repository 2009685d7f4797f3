// The scripted teacher behind the demo model's SFT corpus: an Agent (src/workflows/types.ts) that
// answers every role's TurnRequest of a demo task (src/tasks/builtin/demo.ts) in that role's format,
// right only some of the time, so the model it teaches leaves room for RL. Running the real workflows
// with it yields training rows whose prompts are exactly the workflows' prompts.
//   generator / worker / synthesizer   `17 + 5 = 22.\n\boxed{22}`
//   evaluator                          `\boxed{Correct}` | `\boxed{Incorrect} 23 is not 17 + 5.`
//   aggregator                         `\boxed{2}`
//   orchestrator                       `STRATEGY 1: ...` lines (3)
import { mulberry32 } from '../../util/mulberry32.ts';
import type { Task } from '../../tasks/types.ts';
import { lastBoxed } from '../../workflows/parse.ts';
import type { Agent, RoleType, TurnReply, TurnRequest } from '../../workflows/types.ts';

export interface TeacherOptions {
  /** Chance a solving turn (generator, worker) gives the right answer (default 0.6). */
  solve?: number;
  /** Chance a refine turn (Eval-Opt, after feedback) gives the right answer (default 0.6). */
  refine?: number;
  /** Chance the evaluator's verdict is right (default 0.85). */
  judge?: number;
  /** Chance the aggregator picks a right candidate when there is one (default 0.85). */
  pick?: number;
  /** Chance the synthesizer answers right when a worker did (default 0.85), else it copies a worker. */
  synthesize?: number;
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

/** The teacher's solving-turn text for an answer. */
export function solutionText(p: { a: number; op: string; b: number }, answer: number): string {
  return `${p.a} ${p.op} ${p.b} = ${answer}.\n\\boxed{${answer}}`;
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
    this.o = { solve: 0.6, refine: 0.6, judge: 0.85, pick: 0.85, synthesize: 0.85, ...opts };
  }

  private chance(p: number): boolean {
    return this.rand() < p;
  }

  /** The right value with probability p, else a near miss (never negative). */
  private answer(p: number): number {
    const v = this.p.value;
    if (this.chance(p)) return v;
    const offsets = [-10, -2, -1, 1, 1, 2, 10].filter((d) => v + d >= 0);
    return v + offsets[Math.floor(this.rand() * offsets.length)]!;
  }

  private reply(role: RoleType, content: string): string {
    const p = this.p;
    const right = String(p.value);
    switch (role) {
      case 'generator':
        return solutionText(p, this.answer(content.startsWith('Improve your solution') ? this.o.refine : this.o.solve));
      case 'worker':
        return solutionText(p, this.answer(this.o.solve));
      case 'evaluator': {
        const at = content.lastIndexOf('\nSolution:\n');
        const shown = at >= 0 ? lastBoxed(content.slice(at)) : null;
        const isRight = shown === right;
        const sayRight = this.chance(this.o.judge) ? isRight : !isRight;
        if (sayRight) return '\\boxed{Correct}';
        return shown === null ? '\\boxed{Incorrect} There is no boxed answer.' : `\\boxed{Incorrect} ${shown} is not ${p.a} ${p.op} ${p.b}.`;
      }
      case 'aggregator': {
        const cands = candidateAnswers(content);
        if (!cands.length) throw new TeacherError('aggregator prompt without --- Solution i --- blocks');
        const good = cands.flatMap((c, i) => (c === right ? [i] : []));
        const pool = good.length && this.chance(this.o.pick) ? good : cands.map((_, i) => i);
        return `\\boxed{${pool[Math.floor(this.rand() * pool.length)]! + 1}}`;
      }
      case 'orchestrator':
        return DEMO_STRATEGIES[p.op].map((s, i) => `STRATEGY ${i + 1}: ${s}`).join('\n');
      case 'synthesizer': {
        const cands = candidateAnswers(content).filter((c): c is string => c !== null && /^\d+$/.test(c));
        if (cands.includes(right) && this.chance(this.o.synthesize)) return solutionText(p, p.value);
        if (!cands.length) return solutionText(p, this.answer(this.o.solve));
        return solutionText(p, Number(cands[Math.floor(this.rand() * cands.length)]!));
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
