// The Pyodide sandbox under real workers (worker_threads under Node, Web Workers under Deno): correct,
// wrong, crashing, looping, sleeping, memory-hungry and hostile programs, each graded within its limit,
// with the host untouched and a correct program still passing afterwards.
import { existsSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { gradeCode } from '../../src/tasks/code/grade.ts';
import { CodeSandbox } from '../../src/tasks/code/sandbox.ts';
import type { CodeTest } from '../../src/tasks/types.ts';
import { rng } from '../helpers/random.ts';

const fence = (code: string) => `Here is my solution.\n\`\`\`python\n${code}\n\`\`\`\n`;

// a + b over seeded random pairs, as stdin/stdout cases.
function sumTests(n: number, seed: number): CodeTest[] {
  const r = rng(seed);
  return Array.from({ length: n }, () => {
    const a = Math.floor(r() * 2e9) - 1e9;
    const b = Math.floor(r() * 2e9) - 1e9;
    return { type: 'stdin', input: `${a} ${b}\n`, output: `${a + b}\n` } as CodeTest;
  });
}

const SUM = 'a, b = map(int, input().split())\nprint(a + b)';
const FAST = 1000; // per-test limit for the programs that never finish
const GRACE = 1500;
// No wall-clock assertions here (a loaded machine makes them flaky; speed belongs in bench/): a program
// that is not stopped hangs its test, which then fails at this per-test timeout.
const STOPS_WITHIN = { timeout: 60_000 };

describe('code sandbox', () => {
  const sandbox = new CodeSandbox({ workers: 2, graceMs: GRACE });
  const grade = (code: string, tests: CodeTest[], opts: { perTestTimeoutMs?: number; memoryMb?: number } = {}) =>
    gradeCode(fence(code), tests, { sandbox, ...opts });

  beforeAll(() => sandbox.warm());
  // Replacements for killed workers start here, so a test's timing covers only its own program.
  beforeEach(() => sandbox.warm());
  afterAll(() => sandbox.close());

  it('passes a correct stdin program on every case', async () => {
    const tests = sumTests(5, 11);
    expect(await grade(SUM, tests)).toEqual({ reward: 1, reason: 'all 5 tests passed', passed: 5, total: 5 });
  });

  it('reads stdin every common way and tolerates trailing whitespace', async () => {
    const tests: CodeTest[] = [
      { type: 'stdin', input: '3\n1 2 3\n', output: '6\n3 2 1\n' },
      { type: 'stdin', input: '2\n7 8', output: '15\n8 7' },
    ];
    const viaSys = 'import sys\ndata = sys.stdin.read().split()\nxs = data[1:]\nprint(sum(map(int, xs)), "  ")\nprint(" ".join(reversed(xs)))\n';
    const viaOpen = 'n, *xs = open(0).read().split()\nprint(sum(map(int, xs)))\nprint(*reversed(xs))\n\n';
    const viaBuffer = 'import sys\nn = int(sys.stdin.buffer.readline())\nxs = sys.stdin.buffer.readline().split()\n' +
      'sys.stdout.write(str(sum(map(int, xs))) + "\\n")\nsys.stdout.flush()\nsys.stdout.buffer.write(b" ".join(reversed(xs)) + b"\\n")';
    for (const code of [viaSys, viaOpen, viaBuffer]) expect((await grade(code, tests)).reward).toBe(1);
  });

  it('reports the first wrong answer with expected and actual output', async () => {
    const tests = sumTests(4, 12);
    const wrongOnNegative = 'a, b = map(int, input().split())\nprint(abs(a + b))';
    const g = await grade(wrongOnNegative, tests);
    const firstNegative = tests.findIndex((t) => t.type === 'stdin' && t.output.startsWith('-'));
    expect(firstNegative).toBeGreaterThanOrEqual(0);
    expect(g.reward).toBe(0);
    expect(g.passed).toBe(firstNegative);
    expect(g.reason).toContain(`test ${firstNegative + 1}/4 (stdin): wrong answer: line 1: expected "-`);
  });

  it('reports a crash with the exception and its line', async () => {
    const g = await grade('x = int(input())\ny = 0\nprint(x // y)', [{ type: 'stdin', input: '5\n', output: '1\n' }]);
    expect(g.reward).toBe(0);
    expect(g.reason).toMatch(/ZeroDivisionError.*\(line 3\)/);
    const syntax = await grade('def f(:\n  pass', [{ type: 'stdin', input: '', output: '' }]);
    expect(syntax.reason).toMatch(/SyntaxError/);
  });

  it('grades function-call tests (plain function and LiveCodeBench class Solution)', async () => {
    const r = rng(13);
    const tests: CodeTest[] = Array.from({ length: 4 }, () => {
      const nums = Array.from({ length: 1 + Math.floor(r() * 6) }, () => Math.floor(r() * 100) - 50);
      return { type: 'functional', fnName: 'sortedPair', inputs: [nums, 'k'], output: [[...nums].sort((a, b) => a - b), { key: 'k' }] };
    });
    const plain = 'def sortedPair(nums, key):\n    return (sorted(nums), {"key": key})';
    const klass = 'class Solution:\n    def sortedPair(self, nums: List[int], key: str) -> Tuple[List[int], Dict[str, str]]:\n' +
      '        return sorted(nums), {"key": key}';
    expect(await grade(plain, tests)).toEqual({ reward: 1, reason: 'all 4 tests passed', passed: 4, total: 4 });
    expect((await grade(klass, tests)).reward).toBe(1);
    const wrong = await grade('def sortedPair(nums, key):\n    return [nums, {"key": key}]', tests);
    const unsorted = tests.findIndex((t) => t.type === 'functional' && JSON.stringify((t.inputs as number[][])[0]) !== JSON.stringify((t.output as number[][])[0]));
    expect(wrong.reward).toBe(unsorted < 0 ? 1 : 0);
    if (unsorted >= 0) expect(wrong.reason).toContain(`test ${unsorted + 1}/4 (functional): wrong answer: expected`);
    const missing = await grade('def other(): pass', tests);
    expect(missing.reason).toContain("defines no function 'sortedPair'");
  });

  it('stops an infinite loop at the per-test limit', STOPS_WITHIN, async () => {
    const g = await grade('while True:\n    pass', [{ type: 'stdin', input: '', output: '1' }], { perTestTimeoutMs: FAST });
    expect(g.reward).toBe(0);
    expect(g.reason).toContain(`time limit (${FAST} ms) exceeded`);
  });

  it('interrupts time.sleep', STOPS_WITHIN, async () => {
    const g = await grade('import time\ntime.sleep(60)\nprint(1)', [{ type: 'stdin', input: '', output: '1' }], { perTestTimeoutMs: FAST });
    expect(g.reason).toContain('time limit');
  });

  it('terminates and replaces a worker that swallows the interrupt or loops in C', { timeout: 120_000 }, async () => {
    const swallow = 'while True:\n    try:\n        while True:\n            pass\n    except BaseException:\n        pass';
    const cLoop = 'print(sum(range(10**13)))';
    for (const code of [swallow, cLoop]) {
      await sandbox.warm();
      const before = sandbox.started;
      const g = await grade(code, [{ type: 'stdin', input: '', output: '1' }], { perTestTimeoutMs: FAST });
      expect(g.reward).toBe(0);
      expect(g.reason).toContain('the worker was terminated');
      await sandbox.warm();
      expect(sandbox.started).toBe(before + 1);
    }
  });

  it('turns a memory-hungry program into a MemoryError', async () => {
    const hog = 'chunks = []\nwhile True:\n    chunks.append(bytearray(8 << 20))';
    const g = await grade(hog, [{ type: 'stdin', input: '', output: '1' }], { memoryMb: 128 });
    expect(g.reward).toBe(0);
    expect(g.reason).toContain('memory limit exceeded');
  });

  it('caps the output size', async () => {
    const g = await grade('while True:\n    print("x" * 1000)', [{ type: 'stdin', input: '', output: 'x' }]);
    expect(g.reason).toMatch(/output exceeded \d+ bytes/);
  });

  it('survives a stack overflow', async () => {
    const deep = 'import sys\nsys.setrecursionlimit(10**7)\ndef f(n):\n    return f(n + 1) + 1\nprint(f(0))';
    const g = await grade(deep, [{ type: 'stdin', input: '', output: '1' }]);
    expect(g.reward).toBe(0);
    expect(g.reason).toMatch(/Recursion|time limit|terminated/);
  });

  it('refuses processes, sockets, ctypes and JavaScript access', async () => {
    const marker = join(tmpdir(), `troupe-sandbox-${process.pid}-${Date.now()}`);
    const cases: [string, RegExp][] = [
      [`import os\nos.system("echo pwned > ${marker}")`, /os\.system is not allowed/],
      [`import posix\nposix.system("echo pwned > ${marker}")`, /os\.system is not allowed/],
      [`import os\nos.popen("echo pwned > ${marker}").read()`, /os\.popen is not allowed/],
      [`import subprocess\nsubprocess.run(["touch", "${marker}"])`, /module 'subprocess' is not available/],
      ['import socket\ns = socket.create_connection(("127.0.0.1", 9))', /module 'socket' is not available/],
      ['import ctypes\nctypes.CDLL(None).system(b"true")', /module 'ctypes' is not available/],
      ['import js\nprint(js.process)', /module 'js' is not available/],
      ['from pyodide.ffi import to_js\nprint(to_js([]))', /module 'pyodide' is not available/],
      ['import pyodide_js\nprint(pyodide_js)', /module 'pyodide_js' is not available/],
      ['import asyncio\nprint(asyncio)', /module 'asyncio' is not available/],
      // A fresh posix module has the real system(): the worker's JavaScript layer refuses it then.
      [`import _imp, importlib.machinery\nm = _imp.create_builtin(importlib.machinery.ModuleSpec("posix", None))\nm.system("echo pwned > ${marker}")`,
        /host processes and sockets are not available in the sandbox/],
    ];
    for (const [code, why] of cases) {
      const g = await grade(code, [{ type: 'stdin', input: '', output: '' }]);
      expect(g.reward).toBe(0);
      expect(g.reason).toMatch(why);
    }
    expect(existsSync(marker)).toBe(false);
  });

  it('cannot connect to the host even through a fresh _socket module', async () => {
    let connections = 0;
    const server = createServer((c) => {
      connections++;
      c.destroy();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    try {
      const code = [
        'import _imp, importlib.machinery',
        'm = _imp.create_builtin(importlib.machinery.ModuleSpec("_socket", None))',
        '_imp.exec_builtin(m)',
        's = m.socket(m.AF_INET, m.SOCK_STREAM)',
        'try:',
        `    s.connect(("127.0.0.1", ${port}))`,
        '    s.send(b"GET / HTTP/1.0\\r\\n\\r\\n")',
        '    print("connected")',
        'except OSError:',
        '    print("refused")',
      ].join('\n');
      expect((await grade(code, [{ type: 'stdin', input: '', output: 'refused' }])).reason).toBe('all 1 tests passed');
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(connections).toBe(0);
    } finally {
      server.close();
    }
  });

  it('cannot reach globalThis through objects left in the interpreter', async () => {
    // Walks every class for functions whose globals hold Pyodide's JS objects (Pyodide 314 leaves
    // e.g. pyodide.webloop.scheduleCallback, a JS function) and tries each as a way to globalThis.
    // Prints SAFE only if it found such objects and every route from them failed.
    const probe = [
      'import sys',
      'hits, tried = [], 0',
      'def classes():',
      '    seen, todo = set(), [object]',
      '    while todo:',
      '        c = todo.pop()',
      '        try:',
      '            subs = type.__subclasses__(c)',
      '        except Exception:',
      '            continue',
      '        for s in subs:',
      '            if s not in seen:',
      '                seen.add(s)',
      '                todo.append(s)',
      '                yield s',
      'ROUTES = (lambda v: v.constructor.constructor("return globalThis")(),',
      '          lambda v: v.constructor("return globalThis")(),',
      '          lambda v: v.__proto__.constructor("return globalThis")(),',
      '          lambda v: v.call(None))',
      'for name in ("js", "pyodide_js", "_pyodide_core", "pyodide.ffi", "_pyodide._importhook"):',
      '    if sys.modules.get(name) is not None:',
      '        hits.append("sys.modules " + name)',
      'for c in list(classes()):',
      '    for v in list(vars(c).values()):',
      '        g = getattr(v, "__globals__", None)',
      '        if not isinstance(g, dict):',
      '            continue',
      '        for key, x in list(g.items()):',
      '            if type(x).__module__ != "pyodide.ffi":',
      '                continue',
      '            tried += 1',
      '            for route in ROUTES:',
      '                try:',
      '                    got = route(x)',
      '                    hits.append(key + " -> " + repr(got)[:60])',
      '                except BaseException:',
      '                    pass',
      'print("ESCAPED " + "; ".join(hits[:3]) if hits else "SAFE" if tried else "no JS object found")',
    ].join('\n');
    const g = await grade(probe, [{ type: 'stdin', input: '', output: 'SAFE' }], { perTestTimeoutMs: 10_000 });
    expect(g.reason).toBe('all 1 tests passed');
  });

  it('keeps files inside the sandbox, and away from the next program', async () => {
    const name = `troupe-probe-${process.pid}-${Date.now()}.txt`;
    const hostPaths = [join(tmpdir(), name), join(process.cwd(), name)];
    const write = `import os\nfor p in ("/tmp/${name}", "${name}", "${hostPaths[1]}"):\n` +
      '    os.makedirs(os.path.dirname(os.path.abspath(p)), exist_ok=True)\n    open(p, "w").write("secret")\n' +
      `print(open("/tmp/${name}").read(), open("${name}").read())`;
    expect((await grade(write, [{ type: 'stdin', input: '', output: 'secret secret' }])).reward).toBe(1);
    for (const p of hostPaths) expect(existsSync(p)).toBe(false);
    const read = `import os\nprint(os.path.exists("/tmp/${name}"), os.path.exists("${hostPaths[1]}"), os.listdir("/tmp"))`;
    // Either worker may take the next program; both must be clean.
    const [a, b] = await Promise.all([grade(read, [{ type: 'stdin', input: '', output: 'False False []' }]), grade(read, [{ type: 'stdin', input: '', output: 'False False []' }])]);
    expect([a.reason, b.reason]).toEqual(['all 1 tests passed', 'all 1 tests passed']);
  });

  it('resets interpreter state between programs', async () => {
    const tamper = 'import builtins, sys, json\nbuiltins.print = lambda *a, **k: None\nsys.modules["json"] = None\n' +
      'sys.setrecursionlimit(50)\nimport signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nleaked = 1';
    await Promise.all([grade(tamper, [{ type: 'stdin', input: '', output: '' }]), grade(tamper, [{ type: 'stdin', input: '', output: '' }])]);
    // SIGINT's handler is checked by identity, not by how fast a loop stops: on a loaded machine an interrupted
    // worker can miss the grace period and be terminated, which says nothing about the handler.
    const check = 'import sys, json, signal\nprint("leaked" in globals(), sys.getrecursionlimit() > 50, json.dumps([1]), ' +
      'signal.getsignal(signal.SIGINT) is signal.default_int_handler)';
    const g = await grade(check, [{ type: 'stdin', input: '', output: 'False True [1] True' }]);
    expect(g.reason).toBe('all 1 tests passed');
    const loop = await grade('while True: pass', [{ type: 'stdin', input: '', output: '' }], { perTestTimeoutMs: FAST });
    expect(loop.reason).toContain(`time limit (${FAST} ms) exceeded`);
  });

  it('after all of that, correct programs still pass, several at once', async () => {
    const grades = await Promise.all([0, 1, 2, 3].map((i) => grade(SUM, sumTests(3, 20 + i))));
    expect(grades.map((g) => g.reward)).toEqual([1, 1, 1, 1]);
  });
});
