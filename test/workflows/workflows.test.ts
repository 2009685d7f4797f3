// The four workflows over a scripted Agent (a test double answering each TurnRequest from a per-slot
// script): the calls made (roles, slots, turns, counts, parallelism), stopping rules, fallbacks and
// recorded violations, the final selection and the answers list, on a math and a code task.
import { describe, expect, it } from 'vitest';
import { builtinTasks } from '../../src/tasks/builtin/index.ts';
import type { Task } from '../../src/tasks/types.ts';
import { CLIP_MARKER, problemText } from '../../src/workflows/common.ts';
import { MAX_EVALUATIONS, PROMPTS as EVAL_OPT_PROMPTS } from '../../src/workflows/eval-opt.ts';
import { rolesOf, workflowByName, WORKFLOWS } from '../../src/workflows/index.ts';
import { GENERIC_STRATEGIES, ORCHESTRATOR_MAX_NEW_TOKENS, PROMPTS as ORCH_PROMPTS } from '../../src/workflows/orch-workers.ts';
import { PROMPTS as SINGLE_PROMPTS } from '../../src/workflows/single.ts';
import type { Agent, EpisodeOutcome, RoleType, TurnReply, TurnRequest } from '../../src/workflows/types.ts';
import { WORKFLOW_NAMES } from '../../src/workflows/types.ts';
import { AGGREGATOR_MAX_NEW_TOKENS, PROMPTS as VOTING_PROMPTS } from '../../src/workflows/voting.ts';

const MATH = builtinTasks({ kind: 'math', train: 1, validation: 1 })[0]!;
const CODE = builtinTasks({ kind: 'code', train: 1, validation: 1 })[0]!;

/** A reply per call of a slot, in call order; a function gets the request and the slot's call index. */
type Script = Record<string, readonly string[] | ((req: TurnRequest, i: number) => string)>;

/** Answers each turn from `script[req.slot]`; records every request and the issue/resolve order. */
class ScriptedAgent implements Agent {
  readonly requests: TurnRequest[] = [];
  readonly events: string[] = [];
  private readonly perSlot = new Map<string, number>();
  constructor(private readonly script: Script) {}

  async turn(req: TurnRequest): Promise<TurnReply> {
    this.requests.push(req);
    this.events.push(`issue ${req.slot}`);
    const i = this.perSlot.get(req.slot) ?? 0;
    this.perSlot.set(req.slot, i + 1);
    const entry = this.script[req.slot];
    let text: string | undefined;
    if (typeof entry === 'function') text = entry(req, i);
    else if (entry) text = entry[i];
    if (text === undefined) throw new Error(`unscripted call ${i} of slot ${req.slot}`);
    // Resolve on a later macrotask, so calls made in parallel are all issued first.
    await new Promise((r) => setTimeout(r, 0));
    this.events.push(`resolve ${req.slot}`);
    return { text, finishReason: 'stop' };
  }

  calls(): string[] {
    return this.requests.map((r) => `${r.role}/${r.slot}/${r.turn}`);
  }

  content(k: number): string {
    const m = this.requests[k]!.messages;
    expect(m).toHaveLength(1);
    expect(m[0]!.role).toBe('user');
    return m[0]!.content;
  }
}

const boxed = (x: string | number) => `Reasoning... so the answer is \\boxed{${x}}.`;
const code = (body: string) => `Here:\n\`\`\`python\n${body}\n\`\`\``;

describe('single', () => {
  it('math: one generator turn (slot generator, turn 0); final = its output', async () => {
    const agent = new ScriptedAgent({ generator: [boxed(161)] });
    const out = await workflowByName('single').run(MATH, agent);
    expect(agent.calls()).toEqual(['generator/generator/0']);
    expect(agent.content(0)).toBe(SINGLE_PROMPTS.math.generator({ problem: problemText(MATH) }));
    expect(agent.content(0)).toContain(MATH.prompt);
    expect(agent.content(0)).toContain('\\boxed{}');
    expect(agent.requests[0]!.maxNewTokens).toBeUndefined();
    expect(out).toEqual({
      final: boxed(161),
      finalRole: 'generator',
      answers: [{ role: 'generator', slot: 'generator', text: boxed(161) }],
      violations: [],
    });
  });

  it('code: the prompt asks for a python block and shows starter code; no block is a violation', async () => {
    const task: Task = { ...CODE, starterCode: 'def clamp_list(nums):\n    pass' };
    const agent = new ScriptedAgent({ generator: ['I would loop over it.'] });
    const out = await workflowByName('single').run(task, agent);
    expect(agent.content(0)).toContain('```python');
    expect(agent.content(0)).toContain('def clamp_list(nums):\n    pass');
    expect(agent.content(0)).toContain(CODE.prompt);
    expect(out.final).toBe('I would loop over it.');
    expect(out.violations).toEqual([{ role: 'generator', slot: 'generator', turn: 0, occurrence: 0, kind: 'generator-no-answer' }]);
  });
});

describe('eval-opt', () => {
  it('stops at the first Correct: one generator and one evaluator call', async () => {
    const agent = new ScriptedAgent({ generator: [boxed(161)], evaluator: ['\\boxed{Correct}'] });
    const out = await workflowByName('eval-opt').run(MATH, agent);
    expect(agent.calls()).toEqual(['generator/generator/0', 'evaluator/evaluator/0']);
    expect(agent.content(1)).toContain(MATH.prompt);
    expect(agent.content(1)).toContain(boxed(161));
    expect(agent.content(1)).toContain('\\boxed{Correct}');
    expect(out.final).toBe(boxed(161));
    expect(out.answers).toEqual([{ role: 'generator', slot: 'generator', text: boxed(161) }]);
    expect(out.verdicts).toEqual([{ slot: 'evaluator', turn: 0, answer: 0, verdict: 'correct' }]);
    expect(out.violations).toEqual([]);
  });

  it('refines on Incorrect with the critique, then stops on Correct; final = last generator output', async () => {
    const agent = new ScriptedAgent({
      generator: [boxed(160), boxed(161)],
      evaluator: ['\\boxed{Incorrect} 7 times 23 is not 160.', '\\boxed{correct}'],
    });
    const out = await workflowByName('eval-opt').run(MATH, agent);
    expect(agent.calls()).toEqual(['generator/generator/0', 'evaluator/evaluator/0', 'generator/generator/0', 'evaluator/evaluator/0']);
    const refine = agent.content(2);
    expect(refine).toBe(
      EVAL_OPT_PROMPTS.math.refine({ problem: problemText(MATH), solution: boxed(160), feedback: '\\boxed{Incorrect} 7 times 23 is not 160.' }),
    );
    expect(refine).toContain('7 times 23 is not 160.');
    expect(agent.content(3)).toContain(boxed(161));
    expect(out.final).toBe(boxed(161));
    expect(out.answers.map((a) => a.text)).toEqual([boxed(160), boxed(161)]);
    expect(out.verdicts).toEqual([
      { slot: 'evaluator', turn: 0, answer: 0, verdict: 'incorrect' },
      { slot: 'evaluator', turn: 0, answer: 1, verdict: 'correct' },
    ]);
  });

  it(`never makes more than ${MAX_EVALUATIONS} evaluator calls; a missing verdict counts as not correct`, async () => {
    expect(MAX_EVALUATIONS).toBe(3);
    const agent = new ScriptedAgent({
      generator: [boxed(1), boxed(2), boxed(3), boxed(4)],
      evaluator: ['\\boxed{Incorrect} no.', 'Looks fine to me.', '\\boxed{Incorrect} still no.', '\\boxed{Correct}'],
    });
    const out = await workflowByName('eval-opt').run(MATH, agent);
    expect(agent.calls()).toEqual([
      'generator/generator/0',
      'evaluator/evaluator/0',
      'generator/generator/0',
      'evaluator/evaluator/0',
      'generator/generator/0',
      'evaluator/evaluator/0',
    ]);
    expect(out.final).toBe(boxed(3));
    expect(out.answers).toHaveLength(3);
    expect(out.verdicts!.map((v) => [v.answer, v.verdict])).toEqual([
      [0, 'incorrect'],
      [1, 'none'],
      [2, 'incorrect'],
    ]);
    expect(out.violations).toEqual([{ role: 'evaluator', slot: 'evaluator', turn: 0, occurrence: 1, kind: 'evaluator-no-verdict' }]);
  });

  it('records evaluator code/solution and generator no-answer violations with their occurrence', async () => {
    const agent = new ScriptedAgent({
      generator: [boxed(5), 'I am not sure.', boxed(161)],
      evaluator: ['\\boxed{Incorrect} it is \\boxed{161}', '\\boxed{Incorrect}\n```python\nprint(7*23)\n```', '\\boxed{Correct}'],
    });
    const out = await workflowByName('eval-opt').run(MATH, agent);
    expect(out.final).toBe(boxed(161));
    expect(out.violations).toEqual([
      { role: 'evaluator', slot: 'evaluator', turn: 0, occurrence: 0, kind: 'evaluator-wrote-solution' },
      { role: 'generator', slot: 'generator', turn: 0, occurrence: 1, kind: 'generator-no-answer' },
      { role: 'evaluator', slot: 'evaluator', turn: 0, occurrence: 1, kind: 'evaluator-wrote-code' },
    ]);
  });

  it('clips a huge solution in the evaluator and refine prompts, keeping its end', async () => {
    const huge = 'x'.repeat(200_000) + boxed(7);
    const agent = new ScriptedAgent({ generator: [huge, boxed(161)], evaluator: ['\\boxed{Incorrect} ' + 'y'.repeat(100_000), '\\boxed{Correct}'] });
    await workflowByName('eval-opt').run(MATH, agent);
    for (const k of [1, 2]) {
      expect(agent.content(k).length).toBeLessThan(10_000);
      expect(agent.content(k)).toContain(CLIP_MARKER);
      expect(agent.content(k)).toContain(boxed(7));
    }
  });

  it('code: program prompts; final = the last generator output', async () => {
    const agent = new ScriptedAgent({
      generator: [code('def clamp_list(nums):\n    return nums'), code('def clamp_list(nums):\n    return [min(20, max(3, x)) for x in nums]')],
      evaluator: ['\\boxed{Incorrect} it does not clamp.', '\\boxed{Correct}'],
    });
    const out = await workflowByName('eval-opt').run(CODE, agent);
    expect(agent.content(0)).toContain('```python');
    expect(agent.content(1)).toBe(EVAL_OPT_PROMPTS.code.evaluator({ problem: problemText(CODE), solution: code('def clamp_list(nums):\n    return nums') }));
    expect(agent.content(2)).toContain('```python');
    expect(out.final).toContain('min(20, max(3, x))');
    expect(out.verdicts!.map((v) => v.verdict)).toEqual(['incorrect', 'correct']);
    expect(out.violations).toEqual([]);
  });
});

describe('voting', () => {
  const gens = { generator0: [boxed(160)], generator1: [boxed(161)], generator2: ['no idea'] };

  it('issues the 3 generator calls before any resolves, then the aggregator over --- Solution i --- blocks', async () => {
    const agent = new ScriptedAgent({ ...gens, aggregator: ['\\boxed{2}'] });
    const out = await workflowByName('voting').run(MATH, agent);
    expect(agent.calls()).toEqual(['generator/generator0/0', 'generator/generator1/0', 'generator/generator2/0', 'aggregator/aggregator/0']);
    expect(agent.events.slice(0, 3)).toEqual(['issue generator0', 'issue generator1', 'issue generator2']);
    const gp = VOTING_PROMPTS.math.generator({ problem: problemText(MATH) });
    for (const k of [0, 1, 2]) expect(agent.content(k)).toBe(gp);
    const agg = agent.content(3);
    expect(agent.requests[3]!.maxNewTokens).toBe(AGGREGATOR_MAX_NEW_TOKENS);
    const at = [1, 2, 3].map((i) => agg.indexOf(`--- Solution ${i} ---`));
    expect(at.every((p) => p >= 0)).toBe(true);
    expect(at[0]!).toBeLessThan(at[1]!);
    expect(at[1]!).toBeLessThan(at[2]!);
    expect(agg.indexOf(boxed(160))).toBeGreaterThan(at[0]!);
    expect(agg.indexOf(boxed(161))).toBeGreaterThan(at[1]!);
    expect(agg.indexOf('no idea')).toBeGreaterThan(at[2]!);
    expect(agg).toContain(MATH.prompt);
    expect(agg).not.toContain('--- Solution 4 ---');
    expect(out.final).toBe(boxed(161));
    expect(out.finalRole).toBe('generator');
    expect(out.choice).toEqual({ slot: 'aggregator', index: 1, parsedBy: 'boxed' });
    expect(out.answers).toEqual([
      { role: 'generator', slot: 'generator0', text: boxed(160) },
      { role: 'generator', slot: 'generator1', text: boxed(161) },
      { role: 'generator', slot: 'generator2', text: 'no idea' },
    ]);
    expect(out.violations).toEqual([{ role: 'generator', slot: 'generator2', turn: 0, occurrence: 0, kind: 'generator-no-answer' }]);
  });

  const aggViolation = { role: 'aggregator', slot: 'aggregator', turn: 0, occurrence: 0, kind: 'aggregator-no-boxed-choice' };

  it.each([
    ['I pick solution 3, it is the best.', 2, 'digit'],
    ['None of them convinced me.', 0, 'default'],
    ['\\boxed{5}', 0, 'default'],
    ['\\boxed{Solution 2}', 1, 'digit'],
  ] as const)('aggregator fallback on %j -> candidate %i (%s), with a violation', async (reply, index, parsedBy) => {
    const agent = new ScriptedAgent({ ...gens, aggregator: [reply] });
    const out = await workflowByName('voting').run(MATH, agent);
    expect(out.choice).toEqual({ slot: 'aggregator', index, parsedBy });
    expect(out.final).toBe(out.answers[index]!.text);
    expect(out.violations).toEqual([{ role: 'generator', slot: 'generator2', turn: 0, occurrence: 0, kind: 'generator-no-answer' }, aggViolation]);
  });

  it('clips a huge candidate in the aggregator prompt', async () => {
    const agent = new ScriptedAgent({ ...gens, generator0: ['z'.repeat(500_000) + boxed(1)], aggregator: ['\\boxed{1}'] });
    const out = await workflowByName('voting').run(MATH, agent);
    const agg = agent.content(3);
    expect(agg.length).toBeLessThan(15_000);
    expect(agg).toContain(CLIP_MARKER);
    expect(agg).toContain(boxed(1));
    // The outcome keeps the whole text: clipping is for prompts only.
    expect(out.final.length).toBe(500_000 + boxed(1).length);
  });

  it('shows other roles only what follows </think>', async () => {
    const agent = new ScriptedAgent({ ...gens, generator0: ['<think>secret musing</think>' + boxed(161)], aggregator: ['\\boxed{1}'] });
    const out = await workflowByName('voting').run(MATH, agent);
    expect(agent.content(3)).not.toContain('secret musing');
    expect(agent.content(3)).toContain(boxed(161));
    expect(out.final).toBe('<think>secret musing</think>' + boxed(161));
    const eo = new ScriptedAgent({ generator: ['<think>secret musing</think>' + boxed(1), boxed(2)], evaluator: ['<think>hidden critique</think>\\boxed{Incorrect} no', '\\boxed{Correct}'] });
    await workflowByName('eval-opt').run(MATH, eo);
    expect(eo.content(1)).not.toContain('secret musing');
    expect(eo.content(2)).not.toContain('secret musing');
    expect(eo.content(2)).not.toContain('hidden critique');
    expect(eo.content(2)).toContain('\\boxed{Incorrect} no');
  });

  it('code: final = the chosen program', async () => {
    const agent = new ScriptedAgent({
      generator0: [code('def clamp_list(nums):\n    return nums')],
      generator1: [code('def clamp_list(nums):\n    return []')],
      generator2: [code('def clamp_list(nums):\n    return [min(20, max(3, x)) for x in nums]')],
      aggregator: ['Solution 3 clamps correctly. \\boxed{3}'],
    });
    const out = await workflowByName('voting').run(CODE, agent);
    expect(agent.content(0)).toContain('```python');
    expect(agent.content(3)).toContain('--- Solution 3 ---');
    expect(out.choice).toEqual({ slot: 'aggregator', index: 2, parsedBy: 'boxed' });
    expect(out.final).toContain('min(20, max(3, x))');
    expect(out.violations).toEqual([]);
  });
});

describe('orch-workers', () => {
  const plan = 'STRATEGY 1: Multiply 7 by 20 and by 3.\nSTRATEGY 2: Multiply 23 by 10, subtract 3 times 23.\nSTRATEGY 3: Add 23 seven times.';

  it('orchestrator, then 3 parallel workers (slot worker) one strategy each, then the synthesizer', async () => {
    const agent = new ScriptedAgent({
      orchestrator: [plan],
      worker: [boxed(161), boxed(160), boxed(161)],
      synthesizer: ['Two agree. \\boxed{161}'],
    });
    const out = await workflowByName('orch-workers').run(MATH, agent);
    expect(agent.calls()).toEqual(['orchestrator/orchestrator/0', 'worker/worker/0', 'worker/worker/0', 'worker/worker/0', 'synthesizer/synthesizer/0']);
    expect(agent.requests[0]!.maxNewTokens).toBe(ORCHESTRATOR_MAX_NEW_TOKENS);
    expect(agent.content(0)).toBe(ORCH_PROMPTS.math.orchestrator({ problem: problemText(MATH) }));
    expect(agent.events.slice(0, 5)).toEqual(['issue orchestrator', 'resolve orchestrator', 'issue worker', 'issue worker', 'issue worker']);
    const strategies = ['Multiply 7 by 20 and by 3.', 'Multiply 23 by 10, subtract 3 times 23.', 'Add 23 seven times.'];
    strategies.forEach((s, k) => {
      expect(agent.content(1 + k)).toBe(ORCH_PROMPTS.math.worker({ problem: problemText(MATH), strategy: s }));
    });
    const syn = agent.content(4);
    expect(syn).toContain(MATH.prompt);
    for (const [i, s] of strategies.entries()) expect(syn.indexOf(s)).toBeGreaterThan(syn.indexOf(`--- Solution ${i + 1} ---`));
    expect(syn).toContain(boxed(160));
    expect(out.final).toBe('Two agree. \\boxed{161}');
    expect(out.finalRole).toBe('synthesizer');
    expect(out.answers.map((a) => `${a.role}/${a.slot}`)).toEqual(['worker/worker', 'worker/worker', 'worker/worker', 'synthesizer/synthesizer']);
    expect(out.answers.map((a) => a.text)).toEqual([boxed(161), boxed(160), boxed(161), 'Two agree. \\boxed{161}']);
    expect(out.violations).toEqual([]);
  });

  const workersOf = (agent: ScriptedAgent) => agent.requests.filter((r) => r.role === 'worker').map((r) => r.messages[0]!.content);
  const fixed = { worker: (_: TurnRequest, i: number) => boxed(160 + i), synthesizer: [boxed(161)] };

  it('numbered-list fallback, truncated to 3, with a violation', async () => {
    const agent = new ScriptedAgent({ ...fixed, orchestrator: ['1. Use the distributive law.\n2. Count by sevens.\n3. Round and fix.\n4. Guess.'] });
    const out = await workflowByName('orch-workers').run(MATH, agent);
    const w = workersOf(agent);
    expect(w).toHaveLength(3);
    expect(w[0]).toContain('Use the distributive law.');
    expect(w[2]).toContain('Round and fix.');
    expect(w.some((c) => c.includes('Guess.'))).toBe(false);
    expect(out.violations).toEqual([{ role: 'orchestrator', slot: 'orchestrator', turn: 0, occurrence: 0, kind: 'orchestrator-no-strategy-lines' }]);
  });

  it('no strategies at all: generic ones; too few: filled with generic ones', async () => {
    const none = new ScriptedAgent({ ...fixed, orchestrator: ['ok'] });
    const out = await workflowByName('orch-workers').run(MATH, none);
    const w = workersOf(none);
    GENERIC_STRATEGIES.math.forEach((g, k) => expect(w[k]).toContain(g));
    expect(out.violations).toEqual([{ role: 'orchestrator', slot: 'orchestrator', turn: 0, occurrence: 0, kind: 'orchestrator-no-strategies' }]);

    const two = new ScriptedAgent({ ...fixed, orchestrator: ['STRATEGY 1: Expand.\nSTRATEGY 2: Estimate, then adjust.'] });
    const out2 = await workflowByName('orch-workers').run(MATH, two);
    const w2 = workersOf(two);
    expect(w2).toHaveLength(3);
    expect(w2[0]).toContain('Expand.');
    expect(w2[1]).toContain('Estimate, then adjust.');
    expect(w2[2]).toContain(GENERIC_STRATEGIES.math[0]!);
    expect(out2.violations).toEqual([]);
  });

  it('records an orchestrator that solves and workers/synthesizer without answers', async () => {
    const agent = new ScriptedAgent({
      orchestrator: [`${plan}\nActually it is \\boxed{161}.`],
      worker: [boxed(161), 'hmm', boxed(161)],
      synthesizer: ['They mostly agree.'],
    });
    const out = await workflowByName('orch-workers').run(MATH, agent);
    expect(out.violations).toEqual([
      { role: 'orchestrator', slot: 'orchestrator', turn: 0, occurrence: 0, kind: 'orchestrator-solved' },
      { role: 'worker', slot: 'worker', turn: 0, occurrence: 1, kind: 'worker-no-answer' },
      { role: 'synthesizer', slot: 'synthesizer', turn: 0, occurrence: 0, kind: 'synthesizer-no-answer' },
    ]);
    expect(out.final).toBe('They mostly agree.');
  });

  it('code: the synthesizer gives its own program, which is final', async () => {
    const agent = new ScriptedAgent({
      orchestrator: ['STRATEGY 1: A list comprehension.\nSTRATEGY 2: A loop with if/else.\nSTRATEGY 3: Use min and max.'],
      worker: (_, i) => code(`def clamp_list(nums):\n    return ${i}`),
      synthesizer: [code('def clamp_list(nums):\n    return [min(20, max(3, x)) for x in nums]')],
    });
    const out = await workflowByName('orch-workers').run(CODE, agent);
    expect(agent.content(0)).toBe(ORCH_PROMPTS.code.orchestrator({ problem: problemText(CODE) }));
    expect(agent.content(0)).toContain('Do not write code');
    expect(workersOf(agent).every((c) => c.includes('```python'))).toBe(true);
    expect(agent.content(4)).toContain('return 2');
    expect(out.final).toContain('min(20, max(3, x))');
    expect(out.answers).toHaveLength(4);
    expect(out.violations).toEqual([]);
  });
});

describe('registry and prompts', () => {
  it('workflowByName, WORKFLOWS, rolesOf; an unknown name is a clear error', () => {
    expect(WORKFLOWS.map((w) => w.name)).toEqual([...WORKFLOW_NAMES]);
    for (const n of WORKFLOW_NAMES) expect(workflowByName(n).name).toBe(n);
    expect(rolesOf('voting')).toEqual(['generator', 'aggregator']);
    expect(rolesOf('orch-workers')).toEqual(['orchestrator', 'worker', 'synthesizer']);
    expect(() => workflowByName('votin')).toThrow(/unknown workflow "votin".*single, eval-opt, voting, orch-workers/);
    expect(() => rolesOf('')).toThrow(/unknown workflow/);
  });

  it("each workflow's roles are the roles it calls, in the order they first act, on math and code", async () => {
    const any = (req: TurnRequest) =>
      req.role === 'evaluator' ? '\\boxed{Incorrect} no' : req.role === 'aggregator' ? '\\boxed{1}' : req.role === 'orchestrator' ? 'STRATEGY 1: go' : boxed(1);
    for (const task of [MATH, CODE]) {
      for (const w of WORKFLOWS) {
        const slots = ['generator', 'generator0', 'generator1', 'generator2', 'evaluator', 'aggregator', 'orchestrator', 'worker', 'synthesizer'];
        const agent = new ScriptedAgent(Object.fromEntries(slots.map((s) => [s, any])));
        const out: EpisodeOutcome = await w.run(task, agent);
        const seen: RoleType[] = [];
        for (const r of agent.requests) if (!seen.includes(r.role)) seen.push(r.role);
        expect({ name: w.name, roles: seen }).toEqual({ name: w.name, roles: [...w.roles] });
        expect(out.answers.some((a) => a.text === out.final)).toBe(true);
        for (const r of agent.requests) expect(r.turn).toBe(0);
      }
    }
  });

  it('prompts are short and exist in math and code variants', () => {
    const p = { problem: '<PROBLEM>', solution: '<SOLUTION>', feedback: '<FEEDBACK>', strategy: '<STRATEGY>', solutions: '<SOLUTIONS>' };
    const inputs = Object.values(p).join('').length;
    const all = [SINGLE_PROMPTS, EVAL_OPT_PROMPTS, VOTING_PROMPTS, ORCH_PROMPTS];
    let n = 0;
    for (const P of all) {
      expect(Object.keys(P.math).sort()).toEqual(Object.keys(P.code).sort());
      for (const kind of ['math', 'code'] as const) {
        for (const f of Object.values(P[kind]) as ((a: typeof p) => string)[]) {
          const text = f(p);
          expect(text).toContain('<PROBLEM>');
          // The instruction itself (all inputs together are at most `inputs` characters) stays short.
          expect(text.length - inputs).toBeLessThan(150);
          n++;
        }
      }
    }
    expect(n).toBe(2 * (1 + 3 + 2 + 3));
  });
});
