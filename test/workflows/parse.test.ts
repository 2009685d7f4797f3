// Parsers of role outputs: answers, choice, strategies, verdicts, violations; hostile inputs (empty,
// 1 MB, unbalanced, thousands of boxes) in bounded time; agreement with the graders' extractors.
import { describe, expect, it } from 'vitest';
import { refExtractBoxed as extractBoxed, refExtractLastCodeBlock as extractLastCodeBlock } from '../ref/extract.ts';
import { mulberry32 } from '../../src/util/mulberry32.ts';
import { clip, CLIP_MARKER } from '../../src/workflows/common.ts';
import {
  aggregatorViolations,
  answerRegion,
  boxedAll,
  evaluatorViolations,
  extractAnswer,
  hasCode,
  lastBoxed,
  lastCodeBlock,
  orchestratorViolations,
  parseChoice,
  parseStrategies,
  parseVerdict,
  STRATEGY_CAP,
} from '../../src/workflows/parse.ts';

const MB = 1 << 20;

/** Runs a parser on a hostile input. No wall-clock assertion (speed belongs in bench/): a super-linear
 * parser on these 1 MB inputs takes minutes and fails by the test's timeout. */
function hostile<T>(f: () => T): T {
  return f();
}

function randomText(rng: () => number, pieces: readonly string[], maxPieces: number): string {
  const n = Math.floor(rng() * maxPieces);
  let s = '';
  for (let i = 0; i < n; i++) s += pieces[Math.floor(rng() * pieces.length)];
  return s;
}

describe('lastBoxed', () => {
  it('reads the last box, with nested braces, \\fbox and the \\boxed 5 form', () => {
    expect(lastBoxed('so \\boxed{42}.')).toBe('42');
    expect(lastBoxed('\\boxed{\\frac{1}{2}}')).toBe('\\frac{1}{2}');
    expect(lastBoxed('\\boxed{ {a}{b{c}} }')).toBe('{a}{b{c}}');
    expect(lastBoxed('\\fbox{7}')).toBe('7');
    expect(lastBoxed('first \\boxed{1} then \\fbox{2} finally \\boxed{3} done')).toBe('3');
    expect(lastBoxed('the answer is \\boxed 5 here')).toBe('5');
    expect(lastBoxed('\\boxed {9}')).toBe('9');
  });

  it('is null with no box, an empty text, or only look-alikes', () => {
    expect(lastBoxed('')).toBeNull();
    expect(lastBoxed('the answer is 42')).toBeNull();
    expect(lastBoxed('\\boxedx{3} \\boxed_{3}')).toBeNull();
    expect(lastBoxed('boxed{3}')).toBeNull();
    expect(lastBoxed('\\boxed')).toBeNull();
  });

  it('skips unbalanced boxes but keeps boxes inside them; escaped braces do not count', () => {
    expect(lastBoxed('\\boxed{2} then \\boxed{3')).toBe('2');
    expect(lastBoxed('\\boxed{ oops \\boxed{4}')).toBe('4');
    expect(lastBoxed('\\boxed{a\\}b}')).toBe('a\\}b');
    expect(lastBoxed('\\boxed{x \\{ y}')).toBe('x \\{ y');
    expect(lastBoxed('}}}} \\boxed{5} }}}')).toBe('5');
  });

  it('a box nested in a box is part of the outer one', () => {
    expect(boxedAll('\\boxed{\\boxed{1}} \\boxed{2}')).toEqual(['\\boxed{1}', '2']);
    expect(lastBoxed('\\boxed{a \\boxed{1}}')).toBe('a \\boxed{1}');
  });

  it('reads only after the last </think>', () => {
    expect(lastBoxed('<think>\\boxed{1}</think> so \\boxed{2}')).toBe('2');
    expect(lastBoxed('<think>\\boxed{1}</think> no box after')).toBeNull();
    expect(answerRegion('a</think>b</think>c')).toBe('c');
  });

  it('hostile inputs in linear time: 1 MB of open boxes, braces, boxes, plain text', () => {
    const open = '\\boxed{'.repeat(Math.ceil(MB / 7));
    expect(hostile(() => lastBoxed(open))).toBeNull();
    expect(hostile(() => lastBoxed('{'.repeat(MB)))).toBeNull();
    expect(hostile(() => lastBoxed('}'.repeat(MB)))).toBeNull();
    expect(hostile(() => lastBoxed('\\'.repeat(MB)))).toBeNull();
    // `\boxed \boxed ...`: each box is the next token, as the grader reads it.
    expect(hostile(() => lastBoxed('\\boxed '.repeat(Math.ceil(MB / 7))))).toBe('\\boxed');
    const many = Array.from({ length: 100_000 }, (_, i) => `\\boxed{${i}}`).join(' ');
    expect(hostile(() => lastBoxed(many))).toBe('99999');
    expect(hostile(() => lastBoxed('x'.repeat(MB) + '\\boxed{ok}'))).toBe('ok');
    // One huge balanced box: its content is returned whole.
    const big = `\\boxed{${'{a}'.repeat(300_000)}}`;
    expect(hostile(() => lastBoxed(big))?.length).toBe(900_000);
  });

  it('agrees with the plain definition (test/ref/extract.ts) on random box soup', () => {
    const rng = mulberry32(1234);
    const pieces = ['\\boxed', '\\fbox', '\\boxedx', '{', '}', '{', '}', '\\', '\\{', '\\}', ' ', '\t', '\n', '$', 'a', '7', '</think>', '\\boxed{', '\\boxed '];
    let withBox = 0;
    for (let i = 0; i < 3000; i++) {
      const s = randomText(rng, pieces, 24);
      const want = extractBoxed(s);
      if (want !== null) withBox++;
      expect({ s, got: lastBoxed(s) }).toEqual({ s, got: want });
    }
    // The soup must exercise both outcomes, or the comparison proves little.
    expect(withBox).toBeGreaterThan(300);
    expect(withBox).toBeLessThan(2700);
  });
});

describe('lastCodeBlock', () => {
  it('reads the last python or untagged block', () => {
    expect(lastCodeBlock('```python\na = 1\n```\ntext\n```\nb = 2\n```')).toBe('b = 2');
    expect(lastCodeBlock('```py\nx\n```')).toBe('x');
    expect(lastCodeBlock('~~~python3\ny\n~~~')).toBe('y');
    expect(lastCodeBlock('```python\nfirst\n```\n```js\nlet a\n```')).toBe('first');
    expect(lastCodeBlock('  ```python\ndef f():\n    return 1\n  ```')).toBe('def f():\n    return 1');
    expect(lastCodeBlock('````python\n```\nstill inside\n````')).toBe('```\nstill inside');
    expect(lastCodeBlock('```python\r\nz = 3\r\n```')).toBe('z = 3');
  });

  it('is null with no complete block', () => {
    expect(lastCodeBlock('')).toBeNull();
    expect(lastCodeBlock('no code here')).toBeNull();
    expect(lastCodeBlock('```python\nunclosed = 1\n')).toBeNull();
    expect(lastCodeBlock('```js\nlet a = 1\n```')).toBeNull();
    expect(lastCodeBlock('inline ```python x``` only')).toBeNull();
  });

  it('hostile inputs in linear time', () => {
    expect(hostile(() => lastCodeBlock('```' + 'a'.repeat(MB) + '`'))).toBeNull();
    expect(hostile(() => lastCodeBlock('```\n'.repeat(MB / 4)))).toBe('');
    expect(hostile(() => lastCodeBlock('`'.repeat(MB)))).toBeNull();
    expect(hostile(() => lastCodeBlock('```python\n' + 'x = 1\n'.repeat(150_000) + '```'))?.length).toBe(6 * 150_000 - 1);
  });

  it('agrees with the plain definition (test/ref/extract.ts) on random fence soup', () => {
    const rng = mulberry32(99);
    const pieces = ['```', '\n```\n', '\n```python\n', '```py', '\n```js\n', '~~~', '\n~~~\n', '````', '`', '\n', '\n', ' ', 'x', 'py', '\r\n', '```python extra', '``` '];
    let withBlock = 0;
    for (let i = 0; i < 3000; i++) {
      const s = randomText(rng, pieces, 20);
      const want = extractLastCodeBlock(s);
      if (want !== null) withBlock++;
      expect({ s, got: lastCodeBlock(s) }).toEqual({ s, got: want });
    }
    expect(withBlock).toBeGreaterThan(300);
    expect(withBlock).toBeLessThan(2700);
  });

  it('extractAnswer picks the extractor by task kind', () => {
    const text = '\\boxed{3}\n```python\nprint(3)\n```';
    expect(extractAnswer('math', text)).toBe('3');
    expect(extractAnswer('code', text)).toBe('print(3)');
    expect(extractAnswer('math', 'print(3)')).toBeNull();
  });
});

describe('parseChoice', () => {
  it('boxed: the last box holding 1..candidates', () => {
    expect(parseChoice('\\boxed{2}', 3)).toEqual({ index: 1, parsedBy: 'boxed' });
    expect(parseChoice('I like 1, but \\boxed{3}', 3)).toEqual({ index: 2, parsedBy: 'boxed' });
    expect(parseChoice('\\boxed{1} no wait \\boxed{ 2 }', 3)).toEqual({ index: 1, parsedBy: 'boxed' });
    expect(parseChoice('\\boxed{\\text{3}}', 3)).toEqual({ index: 2, parsedBy: 'boxed' });
  });

  it('digit: the first digit 1-9 when the box is missing or not a valid number', () => {
    expect(parseChoice('Solution 2 is right', 3)).toEqual({ index: 1, parsedBy: 'digit' });
    expect(parseChoice('\\boxed{Solution 3}', 3)).toEqual({ index: 2, parsedBy: 'digit' });
    expect(parseChoice('0 errors in 3', 3)).toEqual({ index: 2, parsedBy: 'digit' });
    // An out-of-range box falls through to the digit rule (its own first digit is 7, out of range too).
    expect(parseChoice('\\boxed{7}', 3)).toEqual({ index: 0, parsedBy: 'default' });
    expect(parseChoice('\\boxed{4} or 2', 3)).toEqual({ index: 0, parsedBy: 'default' });
  });

  it('default: candidate 1', () => {
    expect(parseChoice('', 3)).toEqual({ index: 0, parsedBy: 'default' });
    expect(parseChoice('none of them', 3)).toEqual({ index: 0, parsedBy: 'default' });
    expect(parseChoice('\\boxed{0}', 3)).toEqual({ index: 0, parsedBy: 'default' });
    expect(() => parseChoice('x', 0)).toThrow(/candidates/);
  });

  it('reads after </think> and survives hostile input', () => {
    expect(parseChoice('<think>\\boxed{3}</think>\\boxed{2}', 3)).toEqual({ index: 1, parsedBy: 'boxed' });
    expect(hostile(() => parseChoice('{'.repeat(MB), 3))).toEqual({ index: 0, parsedBy: 'default' });
    expect(hostile(() => parseChoice('\\boxed{'.repeat(MB / 7) + '2', 3))).toEqual({ index: 1, parsedBy: 'digit' });
    expect(hostile(() => parseChoice('\\boxed{1}'.repeat(MB / 9) + '\\boxed{3}', 3))).toEqual({ index: 2, parsedBy: 'boxed' });
  });

  it('aggregatorViolations flags anything but a boxed choice', () => {
    expect(aggregatorViolations('\\boxed{1}', 3)).toEqual([]);
    expect(aggregatorViolations('Solution 1', 3)).toEqual(['aggregator-no-boxed-choice']);
    expect(aggregatorViolations('\\boxed{5}', 3)).toEqual(['aggregator-no-boxed-choice']);
  });
});

describe('parseVerdict', () => {
  it('reads Correct / Incorrect in any case, the last verdict box winning', () => {
    expect(parseVerdict('\\boxed{Correct}')).toBe('correct');
    expect(parseVerdict('\\boxed{INCORRECT} the sign is wrong')).toBe('incorrect');
    expect(parseVerdict('\\boxed{correct.}')).toBe('correct');
    expect(parseVerdict('\\boxed{\\text{Incorrect}}')).toBe('incorrect');
    expect(parseVerdict('\\boxed{Incorrect} hmm, actually \\boxed{Correct}')).toBe('correct');
    // A solution box after the verdict does not hide it.
    expect(parseVerdict('\\boxed{Incorrect}: it should be \\boxed{12}')).toBe('incorrect');
  });

  it("is 'none' without a verdict box", () => {
    expect(parseVerdict('')).toBe('none');
    expect(parseVerdict('This is correct.')).toBe('none');
    expect(parseVerdict('\\boxed{12}')).toBe('none');
    expect(parseVerdict('\\boxed{not correct}')).toBe('none');
    expect(parseVerdict('\\boxed{Correct')).toBe('none');
    expect(hostile(() => parseVerdict('\\boxed{Correct'.repeat(MB / 14)))).toBe('none');
  });

  it('evaluatorViolations: no verdict, code, a solution box', () => {
    expect(evaluatorViolations('\\boxed{Correct}')).toEqual([]);
    expect(evaluatorViolations('\\boxed{Incorrect} step 2 drops a sign')).toEqual([]);
    expect(evaluatorViolations('Looks fine.')).toEqual(['evaluator-no-verdict']);
    expect(evaluatorViolations('\\boxed{Incorrect}\n```python\nprint(1)\n```')).toEqual(['evaluator-wrote-code']);
    expect(evaluatorViolations('\\boxed{Incorrect} use def solve(n): instead')).toEqual(['evaluator-wrote-code']);
    expect(evaluatorViolations('\\boxed{Incorrect}, the answer is \\boxed{12}')).toEqual(['evaluator-wrote-solution']);
    expect(evaluatorViolations('the answer is \\boxed{12}')).toEqual(['evaluator-no-verdict', 'evaluator-wrote-solution']);
  });

  it('hasCode: fences and def, not prose', () => {
    expect(hasCode('```\nx\n```')).toBe(true);
    expect(hasCode('~~~python')).toBe(true);
    expect(hasCode('def  f (x):')).toBe(true);
    expect(hasCode('we define f and undef g; default')).toBe(false);
    expect(hasCode('inline `x` code')).toBe(false);
    expect(hostile(() => hasCode('def '.repeat(MB / 4)))).toBe(false);
    expect(hostile(() => hasCode('def a' + 'a'.repeat(MB)))).toBe(false);
  });
});

describe('parseStrategies', () => {
  it('STRATEGY k: markers, ordered by k, at most 3, markdown stripped', () => {
    const text = 'Plan:\nSTRATEGY 2: Use symmetry.\n**STRATEGY 1:** Expand the product.\nstrategy 3 - ignored dash\nStrategy 3: Try small cases.\nSTRATEGY 4: Guess.';
    // 'strategy 3 - ...' is no marker (no ':', '.' or ')'), so it stays in strategy 1's text.
    expect(parseStrategies(text)).toEqual({
      strategies: ['Expand the product.\nstrategy 3 - ignored dash', 'Use symmetry.', 'Try small cases.'],
      parsedBy: 'strategy',
    });
  });

  it('a strategy runs to the next marker (several lines), and the bold-after-number form is read', () => {
    expect(parseStrategies('STRATEGY 1: first\nmore of it\nSTRATEGY 2**: second').strategies).toEqual(['first\nmore of it', 'second']);
    expect(parseStrategies('STRATEGY 1:\nSTRATEGY 2: only this').strategies).toEqual(['only this']);
  });

  it('falls back to a numbered list, then to lines over 10 characters', () => {
    expect(parseStrategies('1. Factor it\n2) Complete the square\n3. Use the formula\n4. Guess')).toEqual({
      strategies: ['Factor it', 'Complete the square', 'Use the formula'],
      parsedBy: 'numbered',
    });
    expect(parseStrategies('short\nWork backward from the goal.\n\nDraw a picture of it.\nok\nA third long line here.\nA fourth long line here.')).toEqual({
      strategies: ['Work backward from the goal.', 'Draw a picture of it.', 'A third long line here.'],
      parsedBy: 'lines',
    });
    expect(parseStrategies('')).toEqual({ strategies: [], parsedBy: 'none' });
    expect(parseStrategies('ok\nfine\n1.\n')).toEqual({ strategies: [], parsedBy: 'none' });
  });

  it('caps each strategy and survives hostile input', () => {
    const long = parseStrategies(`STRATEGY 1: ${'x'.repeat(10_000)}`);
    expect(long.strategies[0]!.length).toBe(STRATEGY_CAP);
    expect(hostile(() => parseStrategies('strategy 1' + ' '.repeat(MB) + 'x')).parsedBy).toBe('lines');
    // Only empty markers: the one long line is the fallback strategy, capped.
    const empty = hostile(() => parseStrategies('STRATEGY 1: '.repeat(MB / 12)));
    expect(empty.parsedBy).toBe('lines');
    expect(empty.strategies[0]!.length).toBeLessThanOrEqual(STRATEGY_CAP);
    const many = hostile(() => parseStrategies('STRATEGY 1: a\n'.repeat(MB / 14)));
    expect(many.strategies).toEqual(['a', 'a', 'a']);
    expect(hostile(() => parseStrategies('1.'.repeat(MB / 2))).parsedBy).toBe('numbered');
  });

  it('orchestratorViolations: solving, fallback formats, nothing usable', () => {
    expect(orchestratorViolations('STRATEGY 1: factor\nSTRATEGY 2: expand')).toEqual([]);
    expect(orchestratorViolations('STRATEGY 1: factor. The answer is \\boxed{4}')).toEqual(['orchestrator-solved']);
    expect(orchestratorViolations('STRATEGY 1: loop\n```python\nprint(1)\n```')).toEqual(['orchestrator-solved']);
    expect(orchestratorViolations('1. factor it\n2. expand it')).toEqual(['orchestrator-no-strategy-lines']);
    expect(orchestratorViolations('')).toEqual(['orchestrator-no-strategies']);
  });
});

describe('clip', () => {
  it('keeps short texts, cuts the middle of long ones around a marker', () => {
    expect(clip('  short  ', 100)).toBe('short');
    const t = 'H'.repeat(5000) + 'T'.repeat(5000);
    const c = clip(t, 3000);
    expect(c).toContain(CLIP_MARKER);
    expect(c.length).toBe(3000 + CLIP_MARKER.length);
    expect(c.startsWith('H'.repeat(1000) + CLIP_MARKER)).toBe(true);
    expect(c.endsWith('T'.repeat(2000))).toBe(true);
  });

  it('never splits a surrogate pair (head or tail cut)', () => {
    const lone = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
    for (const max of [3000, 3001, 3003, 3004]) {
      const parts = clip('😀'.repeat(5000), max).split(CLIP_MARKER);
      expect(parts).toHaveLength(2);
      expect(lone.test(parts[0]!)).toBe(false);
      expect(lone.test(parts[1]!)).toBe(false);
    }
  });
});
