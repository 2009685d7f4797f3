// The vitest API troupe's tests rely on, checked on vitest itself (Node) and on test/deno/vitest-shim.ts
// (Deno), so a test file means the same on both: matchers pass and fail alike, unknown matchers throw,
// hooks run in order, .each titles, ctx.skip().
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, test } from 'vitest';

/** Asserts that running `f` fails an expectation (any thrown error). */
function fails(f: () => void): void {
  let threw = false;
  try {
    f();
  } catch {
    threw = true;
  }
  if (!threw) throw new Error('expected the expectation to fail, but it passed');
}

class CustomError extends Error {
  override name = 'CustomError';
}

describe('expect matchers', () => {
  it('pass and fail as vitest does', () => {
    expect(3).toBe(3);
    fails(() => expect({ a: 1 }).toBe({ a: 1 }));
    expect({ a: 1, b: [1, 2, { c: 'x' }] }).toEqual({ a: 1, b: [1, 2, { c: 'x' }] });
    expect({ a: 1, b: undefined }).toEqual({ a: 1 });
    fails(() => expect({ a: 1, b: undefined }).toStrictEqual({ a: 1 }));
    fails(() => expect([1, 2]).toEqual([1, 2, 3]));
    expect(new Float32Array([1, 2])).toEqual(new Float32Array([1, 2]));
    fails(() => expect(new Float32Array([1, 2])).toEqual(new Float32Array([1, 3])));
    expect(NaN).toEqual(NaN);
    expect(0.1 + 0.2).toBeCloseTo(0.3, 10);
    fails(() => expect(0.31).toBeCloseTo(0.3, 2));
    expect(1).toBeLessThan(2);
    fails(() => expect(2).toBeLessThan(2));
    expect(2).toBeLessThanOrEqual(2);
    expect(3).toBeGreaterThan(2);
    fails(() => expect(NaN).toBeGreaterThan(0));
    expect(2).toBeGreaterThanOrEqual(2);
    expect('hello world').toMatch(/wor/);
    expect('hello world').toMatch('lo w');
    fails(() => expect('hello').toMatch(/z/));
    expect([1, 2, 3]).toContain(2);
    expect('abc').toContain('b');
    fails(() => expect([1, 2, 3]).toContain(4));
    expect([1, 2]).toHaveLength(2);
    fails(() => expect('abc').toHaveLength(2));
    expect(1).toBeTruthy();
    expect(0).toBeFalsy();
    expect(null).toBeNull();
    expect(0).toBeDefined();
    expect(undefined).toBeUndefined();
    fails(() => expect(null).toBeUndefined());
    expect(new CustomError('x')).toBeInstanceOf(Error);
    fails(() => expect({}).toBeInstanceOf(CustomError));
  });

  it('.not inverts', () => {
    expect(1).not.toBe(2);
    fails(() => expect(1).not.toBe(1));
    expect([1]).not.toContain(2);
    expect(undefined).not.toBeDefined();
  });

  it('toThrow checks message, pattern and class', () => {
    const boom = () => {
      throw new CustomError('kernel matmul: bad shape');
    };
    expect(boom).toThrow();
    expect(boom).toThrow('bad shape');
    expect(boom).toThrow(/kernel \w+/);
    expect(boom).toThrow(CustomError);
    fails(() => expect(boom).toThrow(/softmax/));
    fails(() => expect(boom).toThrow(TypeError));
    fails(() => expect(() => 1).toThrow());
    expect(() => 1).not.toThrow();
    fails(() => expect(boom).not.toThrow());
  });

  it('resolves and rejects', async () => {
    await expect(Promise.resolve(5)).resolves.toBe(5);
    await expect(Promise.reject(new CustomError('no adapter'))).rejects.toThrow(/adapter/);
    await expect(Promise.reject(new CustomError('x'))).rejects.toBeInstanceOf(CustomError);
    let failed = false;
    await expect(Promise.resolve(1))
      .rejects.toThrow()
      .catch(() => (failed = true));
    expect(failed).toBe(true);
    failed = false;
    await expect(Promise.reject(new Error('y')))
      .resolves.toBe(1)
      .catch(() => (failed = true));
    expect(failed).toBe(true);
  });

  it('an unknown matcher throws instead of passing', () => {
    const e = expect(1) as unknown as Record<string, (x: unknown) => void>;
    expect(() => e.toBeTheAnswerToEverything!(1)).toThrow();
  });
});

describe('hooks', () => {
  const log: string[] = [];
  beforeAll(() => {
    log.push('beforeAll');
  });
  beforeEach(() => {
    log.push('beforeEach');
  });
  afterEach(() => {
    log.push('afterEach');
  });
  afterAll(() => {
    // Runs after the last test of this describe: the log is complete.
    if (log.join(',') !== 'beforeAll,beforeEach,first,afterEach,beforeEach,inner beforeEach,second,afterEach') {
      throw new Error(`hooks ran out of order: ${log.join(',')}`);
    }
  });

  it('first', () => {
    log.push('first');
    expect(log).toEqual(['beforeAll', 'beforeEach', 'first']);
  });

  describe('nested', () => {
    beforeEach(() => {
      log.push('inner beforeEach');
    });
    it('second', () => {
      log.push('second');
      expect(log.slice(-3)).toEqual(['beforeEach', 'inner beforeEach', 'second']);
    });
  });
});

describe('test forms', () => {
  const seen: string[] = [];
  it.each([
    [1, 2, 3],
    [2, 5, 7],
  ])('add %i + %i = %i', (a, b, sum) => {
    seen.push(`${a}+${b}`);
    expect((a as number) + (b as number)).toBe(sum);
  });

  it.each([
    { name: 'f32', bytes: 4 },
    { name: 'f16', bytes: 2 },
  ])('object rows: $name', (row) => {
    const { name, bytes } = row as { name: string; bytes: number };
    seen.push(name);
    expect(bytes * (name === 'f32' ? 1 : 2)).toBe(4);
  });

  it('each ran every row', () => {
    expect(seen).toEqual(['1+2', '2+5', 'f32', 'f16']);
  });

  test('options object with a timeout', { timeout: 30_000 }, async () => {
    await new Promise((r) => setTimeout(r, 5));
    expect(true).toBe(true);
  });

  it.skip('it.skip does not run', () => {
    throw new Error('a skipped test ran');
  });

  it('ctx.skip() stops the test as skipped', (ctx) => {
    ctx.skip();
    throw new Error('code after ctx.skip() ran');
  });
});

const suites: string[] = [];
describe.each([['dawn'], ['wgpu']])('describe.each %s', (backend) => {
  it('registers a test per row', () => {
    suites.push(backend as string);
    expect(typeof backend).toBe('string');
  });
});

describe('after describe.each', () => {
  it('saw both rows', () => {
    expect(suites).toEqual(['dawn', 'wgpu']);
  });
});
