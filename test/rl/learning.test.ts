// GRPO on the demo model raises held-out validation accuracy by a clear margin in a short run, single
// agent here and Voting with isolated policies in learning-voting.test.ts (a file of its own: together they
// outgrew the Deno runner's 15 minutes a file on a slow day), through the CLI as a user runs it with the CPU-sized
// preset (`--preset small`, what `npm start` runs; Voting is `troupe start` cut to 12 of its 16 steps). Validation: 64
// held-out demo tasks x 2 samples at T = 1 (the training temperature), before the first step and after
// the last, 128 episodes each: the standard error of a before/after difference is about 0.06, so the
// asserted margin of 0.10 is out of reach of noise; the runs measured here gained 0.15-0.2.
// What is learned (public/demo-model/README.md): the model works a problem out (`Work: ...`) only about
// 30% of the time and guesses otherwise; working it out is right far more often, on held-out problems too.
// Deno only: lavapipe trains several times faster than SwiftShader (the Node suite trains in
// test/rl/trainer.test.ts); the seeds are fixed, so a run is the same run every time on one driver.
import { describe, expect, it } from 'vitest';
import { MARGIN, runsFolder, train } from '../helpers/learning.ts';

const isDeno = 'Deno' in globalThis;
const dir = runsFolder();

describe.skipIf(!isDeno)('GRPO on the demo model raises validation accuracy', () => {
  it(`single agent: by ${MARGIN} or more in 10 steps of 8 tasks x 8`, { timeout: 900_000 }, async () => {
    const { before, after } = await train(dir(), 'train', 'single', 10, ['--batch-tasks', '8']);
    expect(after.accuracy - before.accuracy).toBeGreaterThanOrEqual(MARGIN);
  });
});
