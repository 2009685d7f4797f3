// Row adapters: one dataset schema -> Task fields. A row that does not fit throws RowError with a
// short reason; the loader counts it and goes on.

import type { CodeTest, Task, TaskKind } from '../types.ts';
import type { Row } from './formats.ts';
import { contentId } from './split.ts';

export class RowError extends Error {
  override name = 'RowError';
  constructor(
    readonly reason: string,
    readonly detail?: string,
  ) {
    super(detail ? `${reason}: ${detail}` : reason);
  }
}

export type AdaptedRow = Omit<Task, 'split' | 'source'>;

export interface RowAdapter {
  name: string;
  kind: TaskKind;
  /** Whether a row has this schema's columns (used to pick an adapter automatically). */
  matches(row: Row): boolean;
  adapt(row: Row): AdaptedRow;
}

function text(row: Row, key: string, what = key): string {
  const v = row[key];
  if (v === undefined || v === null) throw new RowError(`missing ${what}`);
  if (typeof v === 'number' || typeof v === 'bigint') return String(v);
  if (typeof v !== 'string') throw new RowError(`${what} is not text`, `got ${typeof v}`);
  if (v.trim() === '') throw new RowError(`empty ${what}`);
  return v;
}

function record(v: unknown): Record<string, unknown> | undefined {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

/** A JSON string column, or the value itself if the writer stored it structured. */
function jsonColumn(row: Row, key: string): unknown {
  const v = row[key];
  if (typeof v !== 'string') return v;
  if (v.trim() === '') return undefined;
  try {
    return JSON.parse(v);
  } catch (e) {
    throw new RowError(`${key} is not valid JSON`, (e as Error).message);
  }
}

// DAPO-Math-17k wraps each problem in an "Answer: $Answer" instruction; troupe's workflows ask for
// \boxed{} instead, so the wrapper is removed and the bare problem kept.
const DAPO_PREFIX = /^Solve the following math problem step by step\. The last line of your response should be of the form Answer: \$Answer \(without quotes\) where \$Answer is the answer to the problem\.\s*/;
const DAPO_SUFFIX = /\s*Remember to put your answer on its own line after "Answer:"\.?\s*$/;

export const dapoMath: RowAdapter = {
  name: 'dapo-math',
  kind: 'math',
  matches: (row) => Array.isArray(row.prompt) && record(row.reward_model) !== undefined,
  adapt(row) {
    if (!Array.isArray(row.prompt)) throw new RowError('prompt is not a list of messages');
    const user = [...row.prompt].reverse().map(record).find((m) => m?.role === 'user');
    if (!user) throw new RowError('no user message in prompt');
    const content = text(user, 'content', 'prompt content');
    const prompt = content.replace(DAPO_PREFIX, '').replace(DAPO_SUFFIX, '').trim();
    const reward = record(row.reward_model);
    if (!reward) throw new RowError('missing reward_model');
    const answer = text(reward, 'ground_truth', 'reward_model.ground_truth').trim();
    const index = record(row.extra_info)?.index;
    const id = typeof index === 'string' || typeof index === 'number' ? `dapo-${index}` : contentId('dapo', prompt);
    return { id, kind: 'math', prompt, answer, meta: { dataSource: row.data_source } };
  },
};

const MATH_PROMPT_KEYS = ['prompt', 'problem', 'question'];
const MATH_ANSWER_KEYS = ['solution', 'answer'];

/** DAPO-Math-17k-Processed (prompt, solution) and other flat {problem|question, answer} tables. */
export const mathFlat: RowAdapter = {
  name: 'math-flat',
  kind: 'math',
  matches: (row) =>
    MATH_PROMPT_KEYS.some((k) => typeof row[k] === 'string') && MATH_ANSWER_KEYS.some((k) => row[k] !== undefined) && row.tests === undefined,
  adapt(row) {
    const pk = MATH_PROMPT_KEYS.find((k) => row[k] !== undefined) ?? 'prompt';
    const ak = MATH_ANSWER_KEYS.find((k) => row[k] !== undefined) ?? 'solution';
    const prompt = text(row, pk).trim();
    const answer = text(row, ak).trim();
    const id = row.id !== undefined && row.id !== null ? `math-${String(row.id)}` : contentId('math', prompt);
    return { id, kind: 'math', prompt, answer, meta: row.data_source !== undefined ? { dataSource: row.data_source } : undefined };
  },
};

/** LiveCodeBench-style functional input: one JSON value per line, the call's arguments in order. */
function functionalArgs(input: unknown): unknown[] {
  if (Array.isArray(input)) return input;
  if (typeof input !== 'string') throw new RowError('functional test input is neither text nor a list');
  return input
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => {
      try {
        return JSON.parse(l) as unknown;
      } catch {
        throw new RowError('functional test input is not JSON', l.slice(0, 80));
      }
    });
}

function jsonValue(v: unknown): unknown {
  if (typeof v !== 'string') return v;
  try {
    return JSON.parse(v) as unknown;
  } catch {
    return v;
  }
}

function asText(v: unknown, what: string): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number') return String(v);
  throw new RowError(`${what} is not text`);
}

/**
 * DeepCoder's `tests` column, in the forms its subsets use: lcbv5 [{input, output, testtype, fn_name?}],
 * primeintellect [{type: stdin_stdout | function_call, fn_name, input, output: [value]}],
 * taco {inputs: [], outputs: [], fn_name?}.
 */
export function deepcoderTests(raw: unknown, funcName: string | undefined): CodeTest[] {
  const taco = record(raw);
  if (taco && Array.isArray(taco.inputs) && Array.isArray(taco.outputs)) {
    if (taco.inputs.length !== taco.outputs.length) throw new RowError('tests inputs/outputs differ in length');
    const fn = typeof taco.fn_name === 'string' && taco.fn_name !== '' ? taco.fn_name : undefined;
    const outputs = taco.outputs as unknown[];
    return taco.inputs.map((input, i): CodeTest => {
      const output = outputs[i];
      if (!fn) return { type: 'stdin', input: asText(input, 'stdin test input'), output: asText(output, 'stdin test output') };
      const value = Array.isArray(output) && output.length === 1 ? output[0] : output;
      return { type: 'functional', fnName: fn, inputs: functionalArgs(input), output: value };
    });
  }
  if (!Array.isArray(raw)) throw new RowError('tests is neither a list nor {inputs, outputs}');
  return raw.map((t): CodeTest => {
    const test = record(t);
    if (!test) throw new RowError('a test is not an object');
    const type = test.testtype ?? test.type;
    if (type === 'stdin' || type === 'stdin_stdout' || (type === undefined && test.fn_name === undefined)) {
      return { type: 'stdin', input: asText(test.input, 'stdin test input'), output: asText(test.output, 'stdin test output') };
    }
    if (type === 'functional' || type === 'function_call' || type === undefined) {
      const fnName = typeof test.fn_name === 'string' && test.fn_name !== '' ? test.fn_name : funcName;
      if (!fnName) throw new RowError('functional test without fn_name');
      const output = type === 'function_call' && Array.isArray(test.output) && test.output.length === 1 ? test.output[0] : jsonValue(test.output);
      return { type: 'functional', fnName, inputs: functionalArgs(test.input), output };
    }
    throw new RowError('unknown test type', String(type));
  });
}

export const deepcoder: RowAdapter = {
  name: 'deepcoder',
  kind: 'code',
  matches: (row) => typeof row.problem === 'string' && row.tests !== undefined,
  adapt(row) {
    const prompt = text(row, 'problem').trim();
    const metadata = record(jsonColumn(row, 'metadata'));
    const funcName = typeof metadata?.func_name === 'string' ? metadata.func_name : undefined;
    const tests = deepcoderTests(jsonColumn(row, 'tests'), funcName);
    if (tests.length === 0) throw new RowError('no tests');
    const starter = typeof row.starter_code === 'string' && row.starter_code.trim() !== '' ? row.starter_code : undefined;
    const meta: Record<string, unknown> = {};
    if (metadata?.difficulty !== undefined) meta.difficulty = metadata.difficulty;
    return { id: contentId('code', prompt), kind: 'code', prompt, tests, starterCode: starter, meta };
  },
};

export const ADAPTERS: readonly RowAdapter[] = [dapoMath, deepcoder, mathFlat];

export function adapterByName(name: string): RowAdapter {
  const alias: Record<string, string> = { 'dapo-math-processed': 'math-flat', dapo: 'dapo-math' };
  const a = ADAPTERS.find((x) => x.name === (alias[name] ?? name));
  if (!a) throw new RangeError(`dataset adapter "${name}" is unknown (known: ${ADAPTERS.map((x) => x.name).join(', ')}, dapo-math-processed)`);
  return a;
}
