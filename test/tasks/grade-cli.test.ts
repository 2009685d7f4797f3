// `troupe grade`: the last stdout line and the exit code (0 whatever the reward; 2 for bad arguments;
// 1 for unusable input). A few cases spawn the real CLI (node bin/troupe.mjs); the rest run the same
// command registry in-process, which is faster.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { captureCli, spawnTroupe } from '../helpers/cli.ts';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
  last: { reward: number; reason: string } | null;
}

function lastJson(stdout: string): Run['last'] {
  const lines = stdout.trim().split('\n');
  try {
    return JSON.parse(lines[lines.length - 1]!) as Run['last'];
  } catch {
    return null;
  }
}

function spawnGrade(...args: string[]): Run {
  const r = spawnTroupe(['grade', ...args], { timeoutMs: 180_000 });
  return { ...r, last: lastJson(r.stdout) };
}

/** The same command line through runCli in-process. */
async function inProcess(...args: string[]): Promise<Run> {
  const r = await captureCli(['grade', ...args]);
  return { code: r.code, stdout: r.out, stderr: r.err, last: lastJson(r.out) };
}

let dir = '';
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'troupe-grade-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('troupe grade (spawned CLI)', () => {
  it('math: reward 1 on the last line, exit 0', () => {
    const r = spawnGrade('--task', 'math', '--response', 'So the answer is \\boxed{\\dfrac{10}{12}}.', '--answer', '\\frac{5}{6}');
    expect(r.code).toBe(0);
    expect(r.last?.reward).toBe(1);
    expect(r.last?.reason).toMatch(/equal/);
  });

  it('exit 2 for a missing argument, exit 1 for a missing file', () => {
    const missing = spawnGrade('--task', 'math', '--response', '\\boxed{4}');
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/needs --answer/);
    const tests = join(dir, 'tests.json');
    writeFileSync(tests, JSON.stringify([{ type: 'stdin', input: '1 2\n', output: '3\n' }]));
    const noFile = spawnGrade('--task', 'code', '--response', join(dir, 'nope.py'), '--tests', tests);
    expect(noFile.code).toBe(1);
    expect(noFile.stderr).toMatch(/nope\.py: not found/);
  });

  it('code: reward 1 when every test passes (DeepCoder test form), exit 0', () => {
    const tests = join(dir, 'dc.json');
    writeFileSync(tests, JSON.stringify([
      { input: '1 2\n', output: '3\n', testtype: 'stdin' },
      { input: '5 7\n', output: '12\n', testtype: 'stdin' },
    ]));
    const good = join(dir, 'good.md');
    writeFileSync(good, 'Here:\n```python\na, b = map(int, input().split())\nprint(a + b)\n```\n');
    const pass = spawnGrade('--task', 'code', '--response', good, '--tests', tests);
    expect(pass.code).toBe(0);
    expect(pass.last).toEqual({ reward: 1, reason: 'all 2 tests passed' });
  }, 200_000);
});

describe('troupe grade (in-process)', () => {
  it('math: reward 0 for a wrong or missing answer, still exit 0', async () => {
    const wrong = await inProcess('--task', 'math', '--response', '\\boxed{4}', '--answer', '5');
    expect(wrong.code).toBe(0);
    expect(wrong.last).toEqual({ reward: 0, reason: 'not equal (numeric): "4" vs "5"' });
    const none = await inProcess('--task', 'math', '--response', 'I do not know', '--answer', '5');
    expect(none.code).toBe(0);
    expect(none.last?.reward).toBe(0);
    expect(none.last?.reason).toMatch(/no \\boxed/);
  });

  it('exit 2 for bad arguments, exit 1 for an unusable reference answer', async () => {
    const task = await inProcess('--task', 'poetry', '--response', 'x');
    expect(task.code).toBe(2);
    expect(task.stderr).toMatch(/--task must be math or code/);
    const noResponse = await inProcess('--task', 'math', '--answer', '1');
    expect(noResponse.code).toBe(2);
    const badTimeout = await inProcess('--task', 'math', '--response', '\\boxed{1}', '--answer', '1', '--timeout-ms', 'soon');
    expect(badTimeout.code).toBe(2);
    const unknownOption = await inProcess('--task', 'math', '--response', '\\boxed{1}', '--answer', '1', '--verbose');
    expect(unknownOption.code).toBe(2);
    const empty = await inProcess('--task', 'math', '--response', '\\boxed{4}', '--answer', ' ');
    expect(empty.code).toBe(1);
    expect(empty.stderr).toMatch(/reference answer/);
    expect(empty.last).toBeNull();
  });

  it('code: exit 1 for unreadable tests, 2 without --tests, reward 0 without a code block', async () => {
    const response = join(dir, 'prose.md');
    writeFileSync(response, 'Just add them.');
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, '[{"type": ');
    const badTests = await inProcess('--task', 'code', '--response', response, '--tests', bad);
    expect(badTests.code).toBe(1);
    expect(badTests.stderr).toMatch(/bad\.json: not valid JSON/);
    const odd = join(dir, 'odd.json');
    writeFileSync(odd, JSON.stringify([{ type: 'carrier-pigeon' }]));
    const oddTests = await inProcess('--task', 'code', '--response', response, '--tests', odd);
    expect(oddTests.code).toBe(1);
    expect(oddTests.stderr).toMatch(/unknown test type/);
    expect((await inProcess('--task', 'code', '--response', response)).code).toBe(2);
    const tests = join(dir, 'ok.json');
    writeFileSync(tests, JSON.stringify([{ type: 'functional', fnName: 'f', inputs: [1], output: 2 }]));
    const none = await inProcess('--task', 'code', '--response', response, '--tests', tests);
    expect(none.code).toBe(0);
    expect(none.last).toEqual({ reward: 0, reason: 'no fenced Python code block in the response' });
  });
});
