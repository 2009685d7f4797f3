// GRPO on the demo model raises held-out validation accuracy for Voting with isolated policies, through `troupe start`
// as a user runs it (cut to 12 of its 16 steps); the single-agent case and how the margin was chosen:
// learning.test.ts. Deno only (lavapipe trains several times faster than SwiftShader).
import { describe, expect, it } from 'vitest';
import { MARGIN, runsFolder, train } from '../helpers/learning.ts';

const isDeno = 'Deno' in globalThis;
const dir = runsFolder();

describe.skipIf(!isDeno)('GRPO on the demo model raises validation accuracy', () => {
  it(`voting / isolated (troupe start): by ${MARGIN} or more in 12 steps of 4 tasks x 8, the generators' accuracy too`, { timeout: 1_700_000 }, async () => {
    const { before, after } = await train(dir(), 'start', 'voting', 12);
    expect(after.accuracy - before.accuracy).toBeGreaterThanOrEqual(MARGIN);
    expect(after.roles.generator!.accuracy! - before.roles.generator!.accuracy!).toBeGreaterThan(0);
  });
});
