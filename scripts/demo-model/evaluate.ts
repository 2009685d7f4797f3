// Step 3 of the demo model: how well a checkpoint plays every role of every workflow on the demo
// task's held-out validation split, sampled through troupe's rollout engine (T = 0.7 by default).
// Per workflow: the episode accuracy (the graded final answer); per role: the share of turns in the
// role's format (no format violation), and for solving roles the share of right answers.
//   deno run -A scripts/demo-model/evaluate.ts --model DIR [--samples 4] [--tasks 64] [--temperature 0.7] [--json FILE]
import { writeFileSync } from 'node:fs';
import process from 'node:process';
import { parseArgs } from 'node:util';
import { Gpu } from '../../src/gpu/gpu.ts';
import { Qwen3Model } from '../../src/model/qwen3.ts';
import { DirectorySource } from '../../src/model/source.ts';
import { Qwen3Tokenizer } from '../../src/model/tokenizer.ts';
import { loadQwen3 } from '../../src/model/weights.ts';
import { RolloutEngine } from '../../src/rollout/engine.ts';
import { gradeTask } from '../../src/tasks/grade.ts';
import { loadTasks } from '../../src/tasks/source.ts';
import { WORKFLOWS } from '../../src/workflows/index.ts';
import type { Agent, TurnReply, TurnRequest } from '../../src/workflows/types.ts';

const { values } = parseArgs({
  options: {
    model: { type: 'string' },
    samples: { type: 'string', default: '4' },
    tasks: { type: 'string', default: '64' },
    temperature: { type: 'string', default: '0.7' },
    seed: { type: 'string', default: '0' },
    'max-new-tokens': { type: 'string', default: '48' },
    workflows: { type: 'string' },
    json: { type: 'string' },
  },
});
if (!values.model) throw new Error('evaluate.ts: --model DIR is required');
const gpu = await Gpu.create();
const source = new DirectorySource(values.model);
const { config, weights } = await loadQwen3(gpu, source);
const model = new Qwen3Model(gpu, config, weights);
const tokenizer = await Qwen3Tokenizer.load(source, { required: true });
const engine = new RolloutEngine(model, tokenizer, { kvBudgetBytes: 64 * 2 ** 20 });
const tasks = (await loadTasks({ kind: 'math', builtin: 'demo', seed: Number(values.seed), validation: Number(values.tasks) })).validation;
const temperature = Number(values.temperature);
const maxNew = Number(values['max-new-tokens']);
const samples = Number(values.samples);
const wanted = values.workflows?.split(',');

let calls = 0;
class EngineAgent implements Agent {
  readonly turns: { role: string; text: string }[] = [];
  async turn(req: TurnRequest): Promise<TurnReply> {
    const stream = calls++;
    const r = await engine.generate(req.role, req.messages, { temperature, seed: 1234, stream, maxNewTokens: Math.min(req.maxNewTokens ?? maxNew, maxNew) });
    this.turns.push({ role: req.role, text: r.text });
    return { text: r.text, finishReason: r.finishReason };
  }
}

const report: Record<string, unknown> = {};
const t0 = Date.now();
for (const wf of WORKFLOWS) {
  if (wanted && !wanted.includes(wf.name)) continue;
  const episodes = tasks.flatMap((task) => Array.from({ length: samples }, () => task));
  const results = await Promise.all(
    episodes.map(async (task) => {
      const agent = new EngineAgent();
      const outcome = await wf.run(task, agent);
      const reward = (await gradeTask(task, outcome.final)).reward;
      const answerRewards = await Promise.all(outcome.answers.map(async (a) => (await gradeTask(task, a.text)).reward));
      return { task, agent, outcome, reward, answerRewards };
    }),
  );
  const roles: Record<string, { turns: number; violations: number; answers: number; right: number }> = {};
  const role = (r: string) => (roles[r] ??= { turns: 0, violations: 0, answers: 0, right: 0 });
  let verdictRight = 0;
  let verdicts = 0;
  for (const r of results) {
    for (const t of r.agent.turns) role(t.role).turns++;
    for (const v of r.outcome.violations) role(v.role).violations++;
    r.outcome.answers.forEach((a, i) => {
      role(a.role).answers++;
      role(a.role).right += r.answerRewards[i]!;
    });
    for (const v of r.outcome.verdicts ?? []) {
      verdicts++;
      if ((v.verdict === 'correct') === (r.answerRewards[v.answer] === 1) && v.verdict !== 'none') verdictRight++;
    }
  }
  const perRole: Record<string, unknown> = {};
  for (const [name, s] of Object.entries(roles)) {
    perRole[name] = { turns: s.turns, formatOk: +(1 - s.violations / s.turns).toFixed(3), ...(s.answers ? { answerAccuracy: +(s.right / s.answers).toFixed(3) } : {}) };
  }
  const accuracy = results.reduce((a, r) => a + r.reward, 0) / results.length;
  report[wf.name] = { episodes: results.length, accuracy: +accuracy.toFixed(3), roles: perRole, ...(verdicts ? { verdictAccuracy: +(verdictRight / verdicts).toFixed(3) } : {}) };
  console.error(`${wf.name}: accuracy ${accuracy.toFixed(3)} over ${results.length} episodes (${((Date.now() - t0) / 1000).toFixed(0)}s)  ${JSON.stringify(perRole)}`);
  const ex = results.slice(0, 2).flatMap((r) => r.agent.turns.map((t) => `${t.role}: ${JSON.stringify(t.text)}`));
  console.error('  e.g. ' + ex.join('\n       '));
}
const out = { model: values.model, temperature, samples, tasks: tasks.length, workflows: report };
if (values.json) writeFileSync(values.json, JSON.stringify(out, null, 2) + '\n');
console.log(JSON.stringify(out));
await engine.close();
gpu.destroy();
// The math grader's symbolic worker (started for unparsable answers) would keep the process alive.
process.exit(0);
