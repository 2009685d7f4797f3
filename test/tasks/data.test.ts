// Dataset loading: the fixture parquet files (DAPO-Math-17k, its -Processed variant, DeepCoder),
// JSONL files written here with bad rows, URL and Blob sources, read errors, and the split.
import { mkdtempSync, rmSync, writeFileSync, existsSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deepcoderTests, RowError } from '../../src/tasks/data/adapters.ts';
import { formatReport, loadDataset } from '../../src/tasks/data/load.ts';
import { DatasetReadError } from '../../src/tasks/data/read.ts';
import { hash32, splitOf } from '../../src/tasks/data/split.ts';
import { loadTasks } from '../../src/tasks/source.ts';

const FIXTURES = 'test/fixtures/data';

/** A fixture path, or a failure that says the fixture is missing (they are generated on the GPU machine). */
function fixture(name: string): string {
  const p = join(FIXTURES, name);
  if (!existsSync(p)) throw new Error(`fixture ${p} is missing: run test/fixtures/gen/make_fixtures.py (see test/fixtures/README.md)`);
  return p;
}

let dir = '';
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'troupe-data-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function writeJsonl(name: string, lines: string[]): string {
  const p = join(dir, name);
  writeFileSync(p, lines.join('\n') + '\n');
  return p;
}

describe('fixture parquet files', () => {
  it('DAPO-Math-17k rows become math tasks with the ground truth as answer', async () => {
    const { tasks, report } = await loadDataset(fixture('dapo-math.parquet'));
    expect(report.adapter).toBe('dapo-math');
    expect(report.format).toBe('parquet');
    expect(report.rows).toBe(6);
    expect(report.bad).toBe(0);
    expect(tasks).toHaveLength(6);
    const first = tasks.find((t) => t.id === 'dapo-idx-1')!;
    expect(first.kind).toBe('math');
    expect(first.prompt).toContain('1/2 + 1/3');
    expect(first.answer).toBe('\\frac{5}{6}');
    expect(new Set(tasks.map((t) => t.id)).size).toBe(6);
    for (const t of tasks) expect(['train', 'validation']).toContain(t.split);
  });

  it('reads parquet in row chunks, and stops at maxRows', async () => {
    const whole = await loadDataset(fixture('dapo-math.parquet'));
    const chunked = await loadDataset(fixture('dapo-math.parquet'), { chunkRows: 4 });
    expect(chunked.tasks).toEqual(whole.tasks);
    const first = await loadDataset(fixture('dapo-math.parquet'), { chunkRows: 4, maxRows: 5 });
    expect(first.tasks).toEqual(whole.tasks.slice(0, 5));
    expect(first.report.rows).toBe(5);
  });

  it('DAPO-Math-17k-Processed rows (prompt, solution) become the same problems', async () => {
    const raw = await loadDataset(fixture('dapo-math.parquet'));
    const { tasks, report } = await loadDataset(fixture('dapo-math-processed.parquet'));
    expect(report.adapter).toBe('math-flat');
    expect(tasks.map((t) => t.answer)).toEqual(raw.tasks.map((t) => t.answer));
    for (const [i, t] of tasks.entries()) expect(raw.tasks[i]!.prompt.startsWith(t.prompt)).toBe(true);
  });

  it('DeepCoder rows become code tasks with stdin and functional tests', async () => {
    const { tasks, report } = await loadDataset(fixture('deepcoder.parquet'));
    expect(report.adapter).toBe('deepcoder');
    expect(tasks).toHaveLength(4);
    const sum = tasks.find((t) => t.prompt.startsWith('Read two integers'))!;
    expect(sum.tests).toEqual([
      { type: 'stdin', input: '1 2\n', output: '3\n' },
      { type: 'stdin', input: '5 7\n', output: '12\n' },
    ]);
    const total = tasks.find((t) => t.prompt.startsWith('Write total'))!;
    expect(total.tests).toEqual([{ type: 'functional', fnName: 'total', inputs: [[1, 2, 3]], output: 6 }]);
    expect(total.starterCode).toContain('def total');
    const rev = tasks.find((t) => t.prompt.startsWith('Write reverse'))!;
    expect(rev.tests).toEqual([{ type: 'functional', fnName: 'reverse', inputs: ['abc'], output: 'cba' }]);
  });

  it('reads from a URL (fetch) and from a Blob the same as from a path', async () => {
    const bytes = readFileSync(fixture('dapo-math.parquet'));
    const server: Server = createServer((req, res) => {
      if (req.url === '/dapo.parquet') {
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        res.end(bytes);
      } else {
        res.writeHead(404);
        res.end();
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    try {
      const fromPath = await loadDataset(fixture('dapo-math.parquet'));
      const fromUrl = await loadDataset(`http://127.0.0.1:${port}/dapo.parquet`);
      expect(fromUrl.tasks.map((t) => [t.id, t.answer, t.split])).toEqual(fromPath.tasks.map((t) => [t.id, t.answer, t.split]));
      await expect(loadDataset(`http://127.0.0.1:${port}/missing.parquet`)).rejects.toThrow(/HTTP 404/);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    const blob = new Blob([new Uint8Array(bytes)]);
    const fromBlob = await loadDataset(blob);
    expect(fromBlob.tasks.map((t) => t.answer)).toEqual(['5', '\\frac{5}{6}', '3', '144', '2\\sqrt{2}', '25']);
  });
});

describe('JSONL and bad rows', () => {
  it('counts bad rows per reason, skips duplicates, and keeps every good row', async () => {
    const p = writeJsonl('math.jsonl', [
      JSON.stringify({ prompt: 'What is 1+1?', solution: '2' }),
      '{"prompt": "broken',
      JSON.stringify({ prompt: 'What is 2+2?', solution: '' }),
      JSON.stringify({ prompt: '', solution: '3' }),
      '[1, 2, 3]',
      JSON.stringify({ prompt: 'What is 3+3?', solution: 6 }),
      JSON.stringify({ prompt: 'What is 1+1?', solution: '2' }),
      JSON.stringify({ prompt: { nested: true }, solution: '1' }),
      '',
      JSON.stringify({ prompt: 'What is 4+4?', solution: '8' }),
    ]);
    const { tasks, report } = await loadDataset(p, { adapter: 'dapo-math-processed' });
    expect(tasks.map((t) => [t.prompt, t.answer])).toEqual([
      ['What is 1+1?', '2'],
      ['What is 3+3?', '6'],
      ['What is 4+4?', '8'],
    ]);
    expect(report.duplicates).toBe(1);
    expect(report.bad).toBe(5);
    expect(report.badByReason).toEqual({
      'invalid JSON': 1,
      'not a JSON object': 1,
      'empty solution': 1,
      'empty prompt': 1,
      'prompt is not text': 1,
    });
    expect(report.badExamples.map((b) => b.row).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 7]);
    expect(formatReport(report)).toMatch(/3 tasks .* 1 duplicates, 5 bad \(/);
  });

  it('DAPO-Math rows: strips the "Answer:" instruction wrapper, reports rows without ground truth', async () => {
    const wrap = (problem: string): string =>
      'Solve the following math problem step by step. The last line of your response should be of the form Answer: $Answer (without quotes) where $Answer is the answer to the problem.\n\n' +
      `${problem}\n\nRemember to put your answer on its own line after "Answer:".`;
    const row = (problem: string, truth: unknown, index: string) =>
      JSON.stringify({
        data_source: 'math_dapo',
        prompt: [{ role: 'user', content: wrap(problem) }],
        ability: 'MATH',
        reward_model: truth === undefined ? { style: 'rule' } : { ground_truth: truth, style: 'rule' },
        extra_info: { index },
      });
    const p = writeJsonl('dapo.jsonl', [
      row('Find $x$ if $2x=8$.', '4', 'a'),
      row('Find $y$ if $3y=9$.', undefined, 'b'),
      row('Find $x$ if $2x=8$.', '4', 'a'), // DAPO-Math-17k repeats every problem
      JSON.stringify({ prompt: [{ role: 'system', content: 'hi' }], reward_model: { ground_truth: '1' } }),
    ]);
    const { tasks, report } = await loadDataset(p);
    expect(report.adapter).toBe('dapo-math');
    expect(tasks).toHaveLength(1);
    expect(tasks[0]!.prompt).toBe('Find $x$ if $2x=8$.');
    expect(tasks[0]!.id).toBe('dapo-a');
    expect(report.duplicates).toBe(1);
    expect(report.badByReason).toEqual({ 'missing reward_model.ground_truth': 1, 'no user message in prompt': 1 });
  });

  it('DeepCoder rows: bad tests JSON, empty tests and functional tests without a name are bad rows', async () => {
    const p = writeJsonl('code.jsonl', [
      JSON.stringify({ problem: 'Echo.', tests: JSON.stringify([{ input: 'a\n', output: 'a\n', testtype: 'stdin' }]), starter_code: '', metadata: '{}' }),
      JSON.stringify({ problem: 'Bad JSON.', tests: '[{"input": ', starter_code: '', metadata: '{}' }),
      JSON.stringify({ problem: 'No tests.', tests: '[]', starter_code: '', metadata: '{}' }),
      JSON.stringify({ problem: 'No name.', tests: JSON.stringify([{ input: '1', output: '1', testtype: 'functional' }]), starter_code: '', metadata: '{}' }),
      JSON.stringify({
        problem: 'Name in metadata.',
        tests: JSON.stringify([{ input: '1\n2', output: '3', testtype: 'functional' }]),
        starter_code: 'class Solution:\n    def add(self, a, b):\n        pass',
        metadata: JSON.stringify({ func_name: 'add' }),
      }),
    ]);
    const { tasks, report } = await loadDataset(p, { adapter: 'deepcoder' });
    expect(tasks.map((t) => t.prompt)).toEqual(['Echo.', 'Name in metadata.']);
    expect(tasks[1]!.tests).toEqual([{ type: 'functional', fnName: 'add', inputs: [1, 2], output: 3 }]);
    expect(report.badByReason).toEqual({ 'tests is not valid JSON': 1, 'no tests': 1, 'functional test without fn_name': 1 });
  });

  it('converts the primeintellect and taco test forms', () => {
    expect(
      deepcoderTests(
        [
          { type: 'stdin_stdout', input: '2\n', output: '4\n' },
          { type: 'function_call', fn_name: 'f', input: [1, [2, 3]], output: [[5]] },
        ],
        undefined,
      ),
    ).toEqual([
      { type: 'stdin', input: '2\n', output: '4\n' },
      { type: 'functional', fnName: 'f', inputs: [1, [2, 3]], output: [5] },
    ]);
    expect(deepcoderTests({ inputs: ['1\n', '2\n'], outputs: ['1\n', '4\n'] }, undefined)).toEqual([
      { type: 'stdin', input: '1\n', output: '1\n' },
      { type: 'stdin', input: '2\n', output: '4\n' },
    ]);
    expect(deepcoderTests({ fn_name: 'sq', inputs: [[3]], outputs: [[9]] }, undefined)).toEqual([
      { type: 'functional', fnName: 'sq', inputs: [3], output: 9 },
    ]);
    expect(() => deepcoderTests({ inputs: ['1'], outputs: [] }, undefined)).toThrow(RowError);
    expect(() => deepcoderTests('nope', undefined)).toThrow(/neither a list/);
  });
});

describe('read errors name the file', () => {
  it('missing file, corrupt parquet, empty file, no adapter, unknown adapter', async () => {
    await expect(loadDataset(join(dir, 'nope.jsonl'))).rejects.toThrow(DatasetReadError);
    await expect(loadDataset(join(dir, 'nope.jsonl'))).rejects.toThrow(/nope\.jsonl: file not found/);
    const corrupt = join(dir, 'corrupt.parquet');
    writeFileSync(corrupt, 'PAR1 this is not parquet at all PAR1');
    await expect(loadDataset(corrupt)).rejects.toThrow(/corrupt\.parquet: not a readable parquet file/);
    const empty = writeJsonl('empty.jsonl', ['']);
    await expect(loadDataset(empty)).rejects.toThrow(/empty\.jsonl: no rows/);
    const odd = writeJsonl('odd.jsonl', [JSON.stringify({ colour: 'red' })]);
    await expect(loadDataset(odd)).rejects.toThrow(/odd\.jsonl: no adapter fits its columns \(colour\)/);
    await expect(loadDataset(odd, { adapter: 'gsm9k' })).rejects.toThrow(/adapter "gsm9k" is unknown/);
  });

  it('a dataset of the wrong kind is refused by the task source', async () => {
    await expect(loadTasks({ kind: 'code', dataset: fixture('dapo-math.parquet') })).rejects.toThrow(/a code run was asked for/);
  });
});

describe('split', () => {
  it('depends only on (seed, id): deterministic, and independent of the other rows', async () => {
    const lines = Array.from({ length: 200 }, (_, i) => JSON.stringify({ id: i, prompt: `Problem ${i}`, answer: String(i) }));
    const all = await loadDataset(writeJsonl('all.jsonl', lines), { seed: 7, valFraction: 0.3 });
    const again = await loadDataset(writeJsonl('again.jsonl', lines), { seed: 7, valFraction: 0.3 });
    expect(again.tasks.map((t) => t.split)).toEqual(all.tasks.map((t) => t.split));
    // A reversed subset: every kept row keeps its split.
    const subset = await loadDataset(writeJsonl('subset.jsonl', lines.filter((_, i) => i % 3 === 0).reverse()), { seed: 7, valFraction: 0.3 });
    const byId = new Map(all.tasks.map((t) => [t.id, t.split]));
    for (const t of subset.tasks) expect(t.split).toBe(byId.get(t.id));
    // Another seed moves some rows.
    const other = await loadDataset(writeJsonl('other.jsonl', lines), { seed: 8, valFraction: 0.3 });
    const moved = other.tasks.filter((t) => t.split !== byId.get(t.id)).length;
    expect(moved).toBeGreaterThan(20);
    expect(all.report.validation).toBeGreaterThan(35);
    expect(all.report.validation).toBeLessThan(85);
  });

  it('holds out about valFraction of ids, and all or none at 1 and 0', () => {
    let val = 0;
    for (let i = 0; i < 20000; i++) if (splitOf(3, `task-${i}`, 0.1) === 'validation') val++;
    expect(val / 20000).toBeGreaterThan(0.09);
    expect(val / 20000).toBeLessThan(0.11);
    expect(splitOf(3, 'x', 0)).toBe('train');
    expect(splitOf(3, 'x', 1)).toBe('validation');
    expect(() => splitOf(3, 'x', 1.5)).toThrow(RangeError);
    expect(hash32('a')).not.toBe(hash32('b'));
  });
});
