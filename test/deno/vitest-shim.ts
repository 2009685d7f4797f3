// The part of vitest's API troupe's tests use, on top of Deno.test, so the same test files run under
// Deno (wgpu). scripts/test-deno.mjs maps the specifier "vitest" here with an import map.
//
// Supported: describe (nesting, .skip, .only, .skipIf, .runIf, .each), it/test (.skip, .only, .todo,
// .skipIf, .runIf, .each; forms it(name, fn), it(name, fn, timeout), it(name, {timeout, skip}, fn)),
// ctx.skip() (counted as a skip: see SKIP_REPORT), beforeAll/afterAll/beforeEach/afterEach (at file or
// describe level; beforeAll/beforeEach may return a teardown), and expect with the matchers below,
// .not, .resolves, .rejects. Any other matcher or expect.* throws: nothing passes silently.
//
// Each `it` becomes one Deno.test named "suite > sub > test". Deno cannot mark a running test as
// skipped, so a test that calls ctx.skip() passes for Deno and is appended to the file named by the
// environment variable TROUPE_SKIP_REPORT (one JSON line per test); the runner moves it to "skipped".
import { appendFileSync } from 'node:fs';
import { inspect, isDeepStrictEqual } from 'node:util';

interface DenoTestDefinition {
  name: string;
  fn: () => Promise<void>;
  ignore?: boolean;
  only?: boolean;
  sanitizeOps?: boolean;
  sanitizeResources?: boolean;
  sanitizeExit?: boolean;
}
declare const Deno: { test(t: DenoTestDefinition): void; env: { get(name: string): string | undefined } };

/** Same default as vite.config.ts. */
const DEFAULT_TIMEOUT = 120_000;

type Hook = (ctx: TestContext) => unknown;
type TestFn = (ctx: TestContext) => unknown;

export interface TestContext {
  task: { name: string };
  /** Marks the running test skipped (vitest: ctx.skip(condition?, note?)). */
  skip(condition?: boolean | string, note?: string): void;
}

export interface TestOptions {
  timeout?: number;
  skip?: boolean;
  only?: boolean;
  todo?: boolean;
}

class SkipSignal extends Error {
  override name = 'SkipSignal';
}

interface Suite {
  name: string;
  parent: Suite | null;
  skip: boolean;
  beforeAll: Hook[];
  afterAll: Hook[];
  beforeEach: Hook[];
  afterEach: Hook[];
  /** Tests (here or nested) that will run; afterAll runs after the last of them. */
  pending: number;
  started: boolean;
  /** beforeAll's failure: every test of the suite fails with it. */
  setupError: unknown;
  teardowns: (() => unknown)[];
}

function newSuite(name: string, parent: Suite | null, skip: boolean): Suite {
  return { name, parent, skip, beforeAll: [], afterAll: [], beforeEach: [], afterEach: [], pending: 0, started: false, setupError: undefined, teardowns: [] };
}

const root = newSuite('', null, false);
let current = root;

function chain(s: Suite): Suite[] {
  const out: Suite[] = [];
  for (let x: Suite | null = s; x; x = x.parent) out.unshift(x);
  return out;
}

function fullName(s: Suite, name: string): string {
  return [...chain(s).map((x) => x.name).filter(Boolean), name].join(' > ');
}

function reportSkip(name: string, note?: string): void {
  const file = Deno.env.get('TROUPE_SKIP_REPORT');
  if (file) appendFileSync(file, JSON.stringify({ name, note: note ?? '' }) + '\n');
}

async function withTimeout(p: Promise<unknown>, ms: number, name: string): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`test "${name}" timed out after ${ms} ms`)), ms);
  });
  try {
    await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

async function enterSuites(suites: Suite[], ctx: TestContext): Promise<void> {
  for (const s of suites) {
    if (!s.started) {
      s.started = true;
      try {
        for (const h of s.beforeAll) {
          const teardown = await h(ctx);
          if (typeof teardown === 'function') s.teardowns.push(teardown as () => unknown);
        }
      } catch (e) {
        s.setupError = e;
      }
    }
    if (s.setupError !== undefined) throw s.setupError;
  }
}

/** Runs afterAll of every suite whose last test this was (innermost first). */
async function leaveSuites(suites: Suite[]): Promise<unknown> {
  let error: unknown;
  for (const s of [...suites].reverse()) {
    s.pending--;
    if (s.pending > 0 || !s.started) continue;
    for (const h of [...s.afterAll, ...s.teardowns.reverse()]) {
      try {
        await h({ task: { name: s.name }, skip() {} });
      } catch (e) {
        error ??= e;
      }
    }
  }
  return error;
}

function register(name: string, fn: TestFn | undefined, opts: TestOptions): void {
  const suite = current;
  const suites = chain(suite);
  const title = fullName(suite, name);
  const ignore = opts.skip === true || opts.todo === true || fn === undefined || suites.some((s) => s.skip);
  if (!ignore) for (const s of suites) s.pending++;
  const timeout = opts.timeout ?? DEFAULT_TIMEOUT;
  Deno.test({
    name: title,
    ignore,
    only: opts.only,
    // GPU work and child processes outlive a test by design (one device per file).
    sanitizeOps: false,
    sanitizeResources: false,
    sanitizeExit: false,
    async fn() {
      const ctx: TestContext = {
        task: { name },
        skip(condition?: boolean | string, note?: string) {
          if (condition === false) return;
          throw new SkipSignal(typeof condition === 'string' ? condition : note);
        },
      };
      let error: unknown;
      let skipped: SkipSignal | undefined;
      const cleanups: (() => unknown)[] = [];
      try {
        await enterSuites(suites, ctx);
        for (const s of suites) {
          for (const h of s.beforeEach) {
            const cleanup = await h(ctx);
            if (typeof cleanup === 'function') cleanups.push(cleanup as () => unknown);
          }
        }
        await withTimeout(Promise.resolve().then(() => fn!(ctx)), timeout, title);
      } catch (e) {
        if (e instanceof SkipSignal) skipped = e;
        else error = e;
      }
      for (const s of [...suites].reverse()) {
        for (const h of s.afterEach) {
          try {
            await h(ctx);
          } catch (e) {
            error ??= e;
          }
        }
      }
      for (const c of cleanups.reverse()) {
        try {
          await c();
        } catch (e) {
          error ??= e;
        }
      }
      const afterAllError = await leaveSuites(suites);
      error ??= afterAllError;
      if (error !== undefined) throw error;
      if (skipped) reportSkip(title, skipped.message);
    },
  });
}

// ---- it / test ----

function parseArgs(a: unknown, b: unknown): { fn: TestFn | undefined; opts: TestOptions } {
  if (typeof a === 'function') return { fn: a as TestFn, opts: typeof b === 'number' ? { timeout: b } : ((b as TestOptions) ?? {}) };
  if (typeof a === 'number') return { fn: b as TestFn | undefined, opts: { timeout: a } };
  return { fn: b as TestFn | undefined, opts: (a as TestOptions) ?? {} };
}

type ItArgs = [name: string, a?: unknown, b?: unknown];

function makeIt(base: TestOptions) {
  const call = (name: string, a?: unknown, b?: unknown) => {
    const { fn, opts } = parseArgs(a, b);
    register(name, fn, { ...opts, ...base, timeout: opts.timeout });
  };
  return call;
}

function formatTitle(template: string, args: unknown[], index: number): string {
  const first = args[0];
  let out = template.replace(/\$([A-Za-z_][\w.]*)/g, (m, path: string) => {
    if (typeof first !== 'object' || first === null) return m;
    let v: unknown = first;
    for (const k of path.split('.')) v = (v as Record<string, unknown> | undefined)?.[k];
    return typeof v === 'string' ? v : inspect(v);
  });
  let i = 0;
  out = out.replace(/%[sdifjo#%]/g, (spec) => {
    if (spec === '%%') return '%';
    if (spec === '%#') return String(index);
    const v = args[i++];
    if (spec === '%d' || spec === '%i') return String(spec === '%i' ? Math.trunc(Number(v)) : Number(v));
    if (spec === '%f') return String(Number(v));
    if (spec === '%j') return JSON.stringify(v);
    return typeof v === 'string' ? v : inspect(v);
  });
  return out;
}

function makeEach(register1: (name: string, fn: (...args: unknown[]) => unknown, timeout?: number) => void) {
  return (table: readonly unknown[]) => {
    if (!Array.isArray(table)) throw new Error('vitest shim: only the array form of .each is supported');
    return (template: string, fn: (...args: unknown[]) => unknown, timeout?: number) => {
      table.forEach((row, index) => {
        const args = Array.isArray(row) ? row : [row];
        register1(formatTitle(template, args, index), (...ctx: unknown[]) => fn(...args, ...ctx), timeout);
      });
    };
  };
}

interface ItFn {
  (name: string, fn?: TestFn, timeout?: number): void;
  (name: string, options: TestOptions, fn?: TestFn): void;
  skip: ItFn;
  only: ItFn;
  todo: (name: string) => void;
  skipIf: (condition: unknown) => ItFn;
  runIf: (condition: unknown) => ItFn;
  each: (table: readonly unknown[]) => (template: string, fn: (...args: unknown[]) => unknown, timeout?: number) => void;
}

function buildIt(base: TestOptions): ItFn {
  const f = makeIt(base) as unknown as ItFn;
  Object.defineProperties(f, {
    skip: { get: () => buildIt({ ...base, skip: true }) },
    only: { get: () => buildIt({ ...base, only: true }) },
  });
  f.todo = (name: string) => register(name, undefined, { todo: true });
  f.skipIf = (c: unknown) => buildIt({ ...base, skip: base.skip || Boolean(c) });
  f.runIf = (c: unknown) => buildIt({ ...base, skip: base.skip || !c });
  f.each = makeEach((name, fn, timeout) => (f as (n: string, fn: TestFn, t?: number) => void)(name, fn as TestFn, timeout));
  return f;
}

export const it: ItFn = buildIt({});
export const test: ItFn = it;

// ---- describe ----

interface DescribeFn {
  (name: string, fn: () => void): void;
  (name: string, options: TestOptions, fn: () => void): void;
  skip: DescribeFn;
  only: DescribeFn;
  skipIf: (condition: unknown) => DescribeFn;
  runIf: (condition: unknown) => DescribeFn;
  each: (table: readonly unknown[]) => (template: string, fn: (...args: unknown[]) => void) => void;
}

function buildDescribe(base: { skip?: boolean; only?: boolean }): DescribeFn {
  const f = ((name: string, a: unknown, b?: unknown) => {
    const fn = (typeof a === 'function' ? a : b) as () => void;
    const opts = (typeof a === 'object' && a !== null ? a : {}) as TestOptions;
    if (base.only || opts.only) throw new Error('vitest shim: describe.only is not supported; use it.only');
    const parent = current;
    const s = newSuite(name, parent, Boolean(base.skip || opts.skip || parent.skip));
    current = s;
    try {
      const r = fn() as unknown;
      if (r instanceof Promise) throw new Error(`describe("${name}") got an async function: register tests synchronously`);
    } finally {
      current = parent;
    }
  }) as unknown as DescribeFn;
  Object.defineProperties(f, {
    skip: { get: () => buildDescribe({ ...base, skip: true }) },
    only: { get: () => buildDescribe({ ...base, only: true }) },
  });
  f.skipIf = (c: unknown) => buildDescribe({ ...base, skip: base.skip || Boolean(c) });
  f.runIf = (c: unknown) => buildDescribe({ ...base, skip: base.skip || !c });
  f.each = (table) => (template, fn) =>
    makeEach((name, g) => (f as (n: string, fn: () => void) => void)(name, () => g()))(table)(template, (...args) => fn(...args));
  return f;
}

export const describe: DescribeFn = buildDescribe({});
export const suite: DescribeFn = describe;

// ---- hooks ----

export function beforeAll(fn: Hook): void {
  current.beforeAll.push(fn);
}
export function afterAll(fn: Hook): void {
  current.afterAll.push(fn);
}
export function beforeEach(fn: Hook): void {
  current.beforeEach.push(fn);
}
export function afterEach(fn: Hook): void {
  current.afterEach.push(fn);
}

// ---- expect ----

export class AssertionError extends Error {
  override name = 'AssertionError';
}

const show = (v: unknown) => inspect(v, { depth: 4, maxArrayLength: 20, breakLength: 120 });

function isTypedArray(v: unknown): v is ArrayLike<number> {
  return ArrayBuffer.isView(v) && !(v instanceof DataView);
}

/** vitest's toEqual: recursive, undefined properties ignored, class types ignored, NaN equals NaN. */
function looseEqual(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (a instanceof Error && b instanceof Error) return a.message === b.message && a.name === b.name;
  if (a instanceof Date || b instanceof Date) return a instanceof Date && b instanceof Date && a.getTime() === b.getTime();
  if (a instanceof RegExp || b instanceof RegExp) return String(a) === String(b);
  if (isTypedArray(a) || isTypedArray(b)) {
    if (!isTypedArray(a) || !isTypedArray(b) || a.constructor !== b.constructor || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (a instanceof Map || b instanceof Map) {
    if (!(a instanceof Map && b instanceof Map) || a.size !== b.size) return false;
    for (const [k, v] of a) if (!b.has(k) || !looseEqual(v, b.get(k))) return false;
    return true;
  }
  if (a instanceof Set || b instanceof Set) {
    if (!(a instanceof Set && b instanceof Set) || a.size !== b.size) return false;
    for (const v of a) if (![...b].some((w) => looseEqual(v, w))) return false;
    return true;
  }
  if (Array.isArray(a) && Array.isArray(b) && a.length !== b.length) return false;
  const ka = Object.keys(a).filter((k) => (a as Record<string, unknown>)[k] !== undefined);
  const kb = Object.keys(b).filter((k) => (b as Record<string, unknown>)[k] !== undefined);
  if (ka.length !== kb.length) return false;
  return ka.every((k) => Object.hasOwn(b, k) && looseEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

/** Jest/vitest-style toThrow expectation check on a thrown value. */
function throwMatches(thrown: unknown, expected: unknown): boolean {
  if (expected === undefined) return true;
  const message = thrown instanceof Error ? thrown.message : String(thrown);
  if (typeof expected === 'string') return message.includes(expected);
  if (expected instanceof RegExp) return expected.test(message);
  if (typeof expected === 'function') return thrown instanceof (expected as new (...a: unknown[]) => unknown);
  if (expected instanceof Error) return message === expected.message;
  throw new Error(`vitest shim: toThrow(${show(expected)}) is not supported`);
}

type Mode = 'value' | 'resolves' | 'rejects';

function matchers(actual: unknown, negate: boolean, mode: Mode, label?: string) {
  const check = (pass: boolean, what: string, expected?: unknown, withExpected = true) => {
    if (pass === negate) {
      const prefix = label ? `${label}: ` : '';
      const exp = withExpected ? ` ${show(expected)}` : '';
      throw new AssertionError(`${prefix}expected ${show(actual)} ${negate ? 'not ' : ''}${what}${exp}`);
    }
  };
  const num = (name: string, v: unknown): number | bigint => {
    if (typeof v !== 'number' && typeof v !== 'bigint') throw new AssertionError(`${name}: ${show(v)} is not a number`);
    return v;
  };
  return {
    toBe: (e: unknown) => check(Object.is(actual, e), 'to be', e),
    toEqual: (e: unknown) => check(looseEqual(actual, e), 'to deeply equal', e),
    toStrictEqual: (e: unknown) => check(isDeepStrictEqual(actual, e), 'to strictly equal', e),
    toBeCloseTo: (e: number, digits = 2) => {
      const a = num('toBeCloseTo', actual) as number;
      const pass = (a === Infinity && e === Infinity) || (a === -Infinity && e === -Infinity) || Math.abs(a - e) < 10 ** -digits / 2;
      check(pass, `to be close to (${digits} digits)`, e);
    },
    toBeLessThan: (e: number | bigint) => check(num('toBeLessThan', actual) < e, 'to be less than', e),
    toBeLessThanOrEqual: (e: number | bigint) => check(num('toBeLessThanOrEqual', actual) <= e, 'to be less than or equal to', e),
    toBeGreaterThan: (e: number | bigint) => check(num('toBeGreaterThan', actual) > e, 'to be greater than', e),
    toBeGreaterThanOrEqual: (e: number | bigint) => check(num('toBeGreaterThanOrEqual', actual) >= e, 'to be greater than or equal to', e),
    toBeNaN: () => check(Number.isNaN(actual), 'to be NaN', undefined, false),
    toThrow: (e?: unknown) => {
      let thrown: unknown;
      let threw = false;
      if (mode === 'rejects') {
        threw = true;
        thrown = actual;
      } else {
        if (typeof actual !== 'function') throw new AssertionError(`toThrow: ${show(actual)} is not a function`);
        try {
          (actual as () => unknown)();
        } catch (err) {
          threw = true;
          thrown = err;
        }
      }
      const pass = threw && throwMatches(thrown, e);
      if (pass === negate) {
        const got = threw ? `it threw ${show(thrown instanceof Error ? `${thrown.name}: ${thrown.message}` : thrown)}` : 'it did not throw';
        throw new AssertionError(`${label ? `${label}: ` : ''}expected ${negate ? 'not ' : ''}to throw${e === undefined ? '' : ` ${show(e)}`}, but ${got}`);
      }
    },
    toMatch: (e: string | RegExp) => {
      if (typeof actual !== 'string') throw new AssertionError(`toMatch: ${show(actual)} is not a string`);
      check(typeof e === 'string' ? actual.includes(e) : e.test(actual), 'to match', e);
    },
    toContain: (e: unknown) => {
      let pass: boolean;
      if (typeof actual === 'string') pass = typeof e === 'string' && actual.includes(e);
      else if (Array.isArray(actual) || isTypedArray(actual)) pass = Array.prototype.some.call(actual, (x: unknown) => Object.is(x, e));
      else if (actual instanceof Set) pass = actual.has(e);
      else throw new AssertionError(`toContain: ${show(actual)} is not a string, array or set`);
      check(pass, 'to contain', e);
    },
    toHaveLength: (n: number) => {
      const len = (actual as { length?: unknown } | null | undefined)?.length;
      if (typeof len !== 'number') throw new AssertionError(`toHaveLength: ${show(actual)} has no length`);
      check(len === n, `to have length ${n}, has ${len}`, undefined, false);
    },
    toBeTruthy: () => check(Boolean(actual), 'to be truthy', undefined, false),
    toBeFalsy: () => check(!actual, 'to be falsy', undefined, false),
    toBeNull: () => check(actual === null, 'to be null', undefined, false),
    toBeDefined: () => check(actual !== undefined, 'to be defined', undefined, false),
    toBeUndefined: () => check(actual === undefined, 'to be undefined', undefined, false),
    toBeInstanceOf: (c: new (...a: never[]) => unknown) => check(actual instanceof c, 'to be an instance of', c.name),
  };
}

type Matchers = ReturnType<typeof matchers>;
type AsyncMatchers = { [K in keyof Matchers]: (...args: Parameters<Matchers[K]>) => Promise<void> };
export interface Assertion extends Matchers {
  not: Matchers;
  resolves: AsyncMatchers & { not: AsyncMatchers };
  rejects: AsyncMatchers & { not: AsyncMatchers };
}

/** Makes any property not in `target` throw: an unsupported matcher must never pass silently. */
function strict<T extends object>(target: T, what: string): T {
  return new Proxy(target, {
    get(t, key, receiver) {
      if (typeof key === 'symbol' || key in t) return Reflect.get(t, key, receiver);
      if (key === 'then') return undefined; // not a thenable
      throw new TypeError(`vitest shim: ${what}.${key} is not supported (see test/deno/vitest-shim.ts)`);
    },
  });
}

function asyncMatchers(promise: unknown, negate: boolean, mode: 'resolves' | 'rejects', label?: string): AsyncMatchers {
  const names = Object.keys(matchers(undefined, false, 'value')) as (keyof Matchers)[];
  const out = {} as Record<string, (...args: unknown[]) => Promise<void>>;
  for (const name of names) {
    out[name] = async (...args: unknown[]) => {
      if (!(promise instanceof Promise) && typeof (promise as { then?: unknown })?.then !== 'function') {
        throw new AssertionError(`expect(...).${mode}: ${show(promise)} is not a promise`);
      }
      let value: unknown;
      if (mode === 'resolves') {
        try {
          value = await promise;
        } catch (e) {
          throw new AssertionError(`expected promise to resolve, but it rejected with ${show(e instanceof Error ? `${e.name}: ${e.message}` : e)}`);
        }
      } else {
        let resolved = false;
        try {
          value = await promise;
          resolved = true;
        } catch (e) {
          value = e;
        }
        if (resolved) throw new AssertionError(`expected promise to reject, but it resolved to ${show(value)}`);
      }
      (matchers(value, negate, mode, label)[name] as (...a: unknown[]) => void)(...args);
    };
  }
  return strict(out as AsyncMatchers, `expect(...).${mode}${negate ? '.not' : ''}`);
}

function expectFn(actual: unknown, label?: string): Assertion {
  const a = matchers(actual, false, 'value', label) as Assertion;
  a.not = strict(matchers(actual, true, 'value', label), 'expect(...).not');
  let resolves: Assertion['resolves'] | undefined;
  let rejects: Assertion['rejects'] | undefined;
  Object.defineProperties(a, {
    resolves: {
      get: () =>
        (resolves ??= Object.assign(asyncMatchers(actual, false, 'resolves', label), { not: asyncMatchers(actual, true, 'resolves', label) })),
    },
    rejects: {
      get: () => (rejects ??= Object.assign(asyncMatchers(actual, false, 'rejects', label), { not: asyncMatchers(actual, true, 'rejects', label) })),
    },
  });
  return strict(a, 'expect(...)');
}

export const expect = strict(expectFn, 'expect') as (actual: unknown, message?: string) => Assertion;
