// `troupe grade`: grades one response the way training does and prints {"reward":0|1,"reason":"..."}
// as the last stdout line. Exit 0 whatever the reward; 1 for unusable input (missing file, bad tests).
import { readFileSync } from 'node:fs';
import { closeSharedCodeSandbox, gradeCode } from '../../tasks/code/grade.ts';
import { deepcoderTests, RowError } from '../../tasks/data/adapters.ts';
import { gradeMath } from '../../tasks/math/grade.ts';
import { closeSharedSymbolicChecker } from '../../tasks/math/symbolic-host.ts';
import type { CodeTest, Grade } from '../../tasks/types.ts';
import { parse } from '../args.ts';
import { type Command, UsageError } from '../command.ts';

const USAGE = [
  'usage: troupe grade --task math --response TEXT --answer TEXT',
  '       troupe grade --task code --response FILE --tests FILE',
  '',
  'Grades one final response as training does and prints {"reward":0|1,"reason":"..."} as the last line.',
  '',
  '  --task math|code     which grader',
  '  --response TEXT      math: the response text (its last \\boxed{} is graded); code: a file holding the',
  '                       response (its last fenced Python block runs)',
  '  --answer TEXT        math: the reference answer',
  '  --tests FILE         code: JSON list of tests, troupe form ({"type":"stdin","input","output"} or',
  '                       {"type":"functional","fnName","inputs","output"}) or DeepCoder form',
  '  --timeout-ms N       math: symbolic-check budget (default 1000), enforced by terminating the check\'s worker',
].join('\n');

export class GradeInputError extends Error {
  override name = 'GradeInputError';
}

function readText(path: string, what: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (e) {
    const code = (e as { code?: string }).code;
    throw new GradeInputError(`${what} file ${path}: ${code === 'ENOENT' ? 'not found' : (e as Error).message}`);
  }
}

function isTroupeTest(t: unknown): t is CodeTest {
  const x = t as Record<string, unknown> | null;
  if (x === null || typeof x !== 'object') return false;
  if (x.type === 'stdin') return typeof x.input === 'string' && typeof x.output === 'string';
  return x.type === 'functional' && typeof x.fnName === 'string' && Array.isArray(x.inputs) && 'output' in x;
}

/** Tests from a JSON file, in troupe's form or any DeepCoder form. */
export function readTests(path: string): CodeTest[] {
  let raw: unknown;
  try {
    raw = JSON.parse(readText(path, 'tests'));
  } catch (e) {
    if (e instanceof GradeInputError) throw e;
    throw new GradeInputError(`tests file ${path}: not valid JSON: ${(e as Error).message}`);
  }
  if (Array.isArray(raw) && raw.length > 0 && raw.every(isTroupeTest)) return raw;
  try {
    const tests = deepcoderTests(raw, undefined);
    if (tests.length === 0) throw new RowError('no tests');
    return tests;
  } catch (e) {
    if (e instanceof RowError) throw new GradeInputError(`tests file ${path}: ${e.message}`);
    throw e;
  }
}

async function grade(argv: string[]): Promise<Grade> {
  const { values } = parse('grade', {
    args: argv,
    options: {
      task: { type: 'string' },
      response: { type: 'string' },
      answer: { type: 'string' },
      tests: { type: 'string' },
      'timeout-ms': { type: 'string' },
    },
  });
  if (values.response === undefined) throw new UsageError('troupe grade: --response is required');
  if (values.task === 'math') {
    if (values.answer === undefined) throw new UsageError('troupe grade: --task math needs --answer');
    const timeoutMs = values['timeout-ms'] === undefined ? undefined : Number(values['timeout-ms']);
    if (timeoutMs !== undefined && !(timeoutMs > 0)) throw new UsageError(`troupe grade: --timeout-ms must be a positive number`);
    try {
      return await gradeMath(values.response, values.answer, { timeoutMs });
    } finally {
      closeSharedSymbolicChecker();
    }
  }
  if (values.task === 'code') {
    if (values.tests === undefined) throw new UsageError('troupe grade: --task code needs --tests FILE');
    const tests = readTests(values.tests);
    const response = readText(values.response, 'response');
    try {
      const g = await gradeCode(response, tests);
      return { reward: g.reward, reason: g.reason };
    } finally {
      await closeSharedCodeSandbox();
    }
  }
  throw new UsageError(`troupe grade: --task must be math or code, got ${JSON.stringify(values.task ?? '')}`);
}

export const command: Command = {
  name: 'grade',
  summary: 'grade one response (math: \\boxed{} answer; code: tests in the sandbox)',
  usage: USAGE,
  async run(argv) {
    const g = await grade(argv);
    console.log(JSON.stringify({ reward: g.reward, reason: g.reason }));
    return 0;
  },
};
