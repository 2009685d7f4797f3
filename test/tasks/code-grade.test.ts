// The code grader's pure parts: code-block extraction, output comparison, JSON equality, bad input.
import { describe, expect, it } from 'vitest';
import { extractLastCodeBlock, gradeCode, jsonEqual, outputLines } from '../../src/tasks/code/grade.ts';
import { SandboxError } from '../../src/tasks/code/errors.ts';
import type { CodeTest } from '../../src/tasks/types.ts';

describe('extractLastCodeBlock', () => {
  it('takes the last python or untagged block', () => {
    const r = 'First try:\n```python\nprint(1)\n```\nBetter:\n```\nprint(2)\nprint(3)\n```\nDone.';
    expect(extractLastCodeBlock(r)).toBe('print(2)\nprint(3)');
  });

  it('accepts py / python3 tags and CRLF, skips other languages', () => {
    expect(extractLastCodeBlock('```py\na = 1\n```')).toBe('a = 1');
    expect(extractLastCodeBlock('```python3\r\nx = 2\r\n```\r\n')).toBe('x = 2');
    expect(extractLastCodeBlock('```python\nok = 1\n```\n```cpp\nint main(){}\n```')).toBe('ok = 1');
  });

  it('ignores an unterminated block and returns null without one', () => {
    expect(extractLastCodeBlock('```python\nprint(1)\n```\n```python\nprint(2)')).toBe('print(1)');
    expect(extractLastCodeBlock('no code here')).toBeNull();
    expect(extractLastCodeBlock('```python\nprint(1)')).toBeNull();
  });

  it('keeps indentation and inner blank lines', () => {
    expect(extractLastCodeBlock('```python\ndef f():\n\n    return 1\n```')).toBe('def f():\n\n    return 1');
  });
});

describe('output comparison', () => {
  it('strips trailing whitespace per line and trailing blank lines', () => {
    expect(outputLines('1 2 \n3\t\n\n\n')).toEqual(['1 2', '3']);
    expect(outputLines('a\r\nb\r\n')).toEqual(['a', 'b']);
    expect(outputLines(' lead\n')).toEqual([' lead']);
  });

  it('jsonEqual compares structure, not key order', () => {
    expect(jsonEqual({ a: [1, 2, { b: null }], c: 'x' }, { c: 'x', a: [1, 2, { b: null }] })).toBe(true);
    expect(jsonEqual([1, 2], [2, 1])).toBe(false);
    expect(jsonEqual({ a: 1 }, { a: 1, b: 2 })).toBe(false);
    expect(jsonEqual([1], { 0: 1 })).toBe(false);
    expect(jsonEqual(1, '1')).toBe(false);
    expect(jsonEqual(null, {})).toBe(false);
  });
});

describe('gradeCode input checks', () => {
  it('rejects tasks without tests or with malformed tests', async () => {
    await expect(gradeCode('```python\nprint(1)\n```', [])).rejects.toThrow(SandboxError);
    const bad = [{ type: 'functional', fnName: 'not an identifier', inputs: [], output: 1 }] as CodeTest[];
    await expect(gradeCode('```python\nprint(1)\n```', bad)).rejects.toThrow(/test 1 \(functional\)/);
    const unknown = [{ type: 'weird' }] as unknown as CodeTest[];
    await expect(gradeCode('```python\nprint(1)\n```', unknown)).rejects.toThrow(/unknown type/);
  });

  it('gives reward 0 without running anything when there is no code block', async () => {
    const g = await gradeCode('I think the answer is 42.', [{ type: 'stdin', input: '', output: '42' }]);
    expect(g).toEqual({ reward: 0, reason: 'no fenced Python code block in the response', passed: 0, total: 1 });
  });
});
