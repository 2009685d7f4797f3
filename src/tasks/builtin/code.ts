// Built-in Python function tasks: a prompt naming the function, a reference solution, and functional
// tests whose expected outputs come from a JavaScript twin of the reference. Levels 1-3.

import type { FunctionalTest } from '../types.ts';
import type { Rng } from './rng.ts';

export interface CodeProblem {
  level: 1 | 2 | 3;
  generator: string;
  fnName: string;
  prompt: string;
  /** A correct Python solution (the sandbox grading it must give reward 1). */
  solution: string;
  tests: FunctionalTest[];
}

type Json = number | string | boolean | Json[];

interface Template {
  name: string;
  level: 1 | 2 | 3;
  /** Draws the task's parameters, then builds its statement, reference and oracle. */
  make(r: Rng): {
    signature: string;
    description: string;
    solution: string;
    oracle: (...args: Json[]) => Json;
    inputs: (r: Rng) => Json[];
  };
}

const ints = (r: Rng, n: number, lo: number, hi: number): number[] => Array.from({ length: n }, () => r.int(lo, hi));
const word = (r: Rng, alphabet: string, lo: number, hi: number): string =>
  Array.from({ length: r.int(lo, hi) }, () => alphabet[r.int(0, alphabet.length - 1)]).join('');
const WORDS = ['apple', 'river', 'stone', 'cloud', 'tiger', 'lemon', 'piano', 'mango', 'delta', 'orbit'];

const TEMPLATES: Template[] = [
  {
    name: 'sum-multiples',
    level: 1,
    make(r) {
      const k = r.int(2, 7);
      return {
        signature: 'sum_multiples(nums)',
        description: `returns the sum of the integers in the list \`nums\` that are divisible by ${k} (0 if there are none)`,
        solution: `def sum_multiples(nums):\n    return sum(x for x in nums if x % ${k} == 0)\n`,
        oracle: (nums) => (nums as number[]).filter((x) => x % k === 0).reduce((s, x) => s + x, 0),
        inputs: (q) => [ints(q, q.int(0, 9), -30, 60)],
      };
    },
  },
  {
    name: 'count-chars',
    level: 1,
    make(r) {
      const chars = r.pick(['aeiou', 'xyz', 'rst', 'aeiouy', 'lmn']);
      return {
        signature: 'count_chars(s)',
        description: `returns how many characters of the string \`s\` are one of "${chars}" (case-sensitive)`,
        solution: `def count_chars(s):\n    return sum(1 for ch in s if ch in "${chars}")\n`,
        oracle: (s) => [...(s as string)].filter((ch) => chars.includes(ch)).length,
        inputs: (q) => [word(q, 'abcdeilmnorstuxyzAE ', 0, 24)],
      };
    },
  },
  {
    name: 'reverse-words',
    level: 1,
    make() {
      return {
        signature: 'reverse_words(s)',
        description: 'returns the words of the string `s` (separated by single spaces) in reverse order, joined by single spaces',
        solution: `def reverse_words(s):\n    return " ".join(reversed(s.split(" ")))\n`,
        oracle: (s) => (s as string).split(' ').reverse().join(' '),
        inputs: (q) => [Array.from({ length: q.int(1, 6) }, () => q.pick(WORDS)).join(' ')],
      };
    },
  },
  {
    name: 'clamp-list',
    level: 1,
    make(r) {
      const lo = r.int(-10, 5);
      const hi = lo + r.int(3, 20);
      return {
        signature: 'clamp_list(nums)',
        description: `returns a new list where every integer of \`nums\` below ${lo} is replaced by ${lo} and every one above ${hi} by ${hi}`,
        solution: `def clamp_list(nums):\n    return [min(max(x, ${lo}), ${hi}) for x in nums]\n`,
        oracle: (nums) => (nums as number[]).map((x) => Math.min(Math.max(x, lo), hi)),
        inputs: (q) => [ints(q, q.int(0, 8), -30, 40)],
      };
    },
  },
  {
    name: 'caesar',
    level: 2,
    make(r) {
      const k = r.int(1, 25);
      return {
        signature: 'caesar(s)',
        description: `returns \`s\` with every lowercase letter a-z shifted ${k} places forward in the alphabet (wrapping from z to a); other characters are unchanged`,
        solution: `def caesar(s):\n    return "".join(chr((ord(c) - 97 + ${k}) % 26 + 97) if "a" <= c <= "z" else c for c in s)\n`,
        oracle: (s) => [...(s as string)].map((c) => (c >= 'a' && c <= 'z' ? String.fromCharCode(((c.charCodeAt(0) - 97 + k) % 26) + 97) : c)).join(''),
        inputs: (q) => [word(q, 'abcxyzhello wrldQ!', 0, 20)],
      };
    },
  },
  {
    name: 'fizzbuzz',
    level: 2,
    make(r) {
      const a = r.int(2, 5);
      let b = r.int(3, 7);
      while (b % a === 0 || a % b === 0) b = r.int(3, 7); // both words must be reachable alone
      const [wa, wb] = r.pick([['Fizz', 'Buzz'], ['Foo', 'Bar'], ['Ping', 'Pong']] as const);
      return {
        signature: 'fizzbuzz(n)',
        description: `returns a list of strings for 1..n: "${wa}${wb}" for numbers divisible by both ${a} and ${b}, "${wa}" for those divisible by ${a} only, "${wb}" for those divisible by ${b} only, and the number itself as a string otherwise`,
        solution:
          `def fizzbuzz(n):\n    out = []\n    for i in range(1, n + 1):\n        w = ("${wa}" if i % ${a} == 0 else "") + ("${wb}" if i % ${b} == 0 else "")\n` +
          `        out.append(w or str(i))\n    return out\n`,
        oracle: (n) =>
          Array.from({ length: n as number }, (_, j) => {
            const i = j + 1;
            const w = (i % a === 0 ? wa : '') + (i % b === 0 ? wb : '');
            return w || String(i);
          }),
        inputs: (q) => [q.int(0, 25)],
      };
    },
  },
  {
    name: 'to-base',
    level: 2,
    make(r) {
      const base = r.int(2, 9);
      return {
        signature: 'to_base(n)',
        description: `returns the base-${base} representation of the non-negative integer \`n\` as a string of digits (no prefix; "0" for 0)`,
        solution: `def to_base(n):\n    if n == 0:\n        return "0"\n    digits = ""\n    while n > 0:\n        digits = str(n % ${base}) + digits\n        n //= ${base}\n    return digits\n`,
        oracle: (n) => (n as number).toString(base),
        inputs: (q) => [q.pick([0, q.int(1, 9), q.int(10, 999), q.int(1000, 100000)])],
      };
    },
  },
  {
    name: 'rotate',
    level: 2,
    make() {
      return {
        signature: 'rotate(nums, k)',
        description: 'returns the list `nums` rotated right by `k` places (k >= 0 may exceed the length; an empty list stays empty)',
        solution: `def rotate(nums, k):\n    if not nums:\n        return []\n    k %= len(nums)\n    return nums[-k:] + nums[:-k] if k else list(nums)\n`,
        oracle: (nums, k) => {
          const a = nums as number[];
          if (a.length === 0) return [];
          const s = (k as number) % a.length;
          return s === 0 ? [...a] : [...a.slice(-s), ...a.slice(0, -s)];
        },
        inputs: (q) => [ints(q, q.int(0, 7), -9, 9), q.int(0, 12)],
      };
    },
  },
  {
    name: 'run-length',
    level: 3,
    make() {
      return {
        signature: 'run_length(s)',
        description: 'returns the run-length encoding of `s`: each maximal run of one character becomes the character followed by the run length, e.g. "aaabcc" -> "a3b1c2"',
        solution:
          `def run_length(s):\n    out = []\n    i = 0\n    while i < len(s):\n        j = i\n        while j < len(s) and s[j] == s[i]:\n            j += 1\n` +
          `        out.append(s[i] + str(j - i))\n        i = j\n    return "".join(out)\n`,
        oracle: (s) => (s as string).replace(/(.)\1*/g, (run) => `${run[0]}${run.length}`),
        inputs: (q) => [Array.from({ length: q.int(0, 6) }, () => q.pick(['a', 'b', 'c', 'z']).repeat(q.int(1, 4))).join('')],
      };
    },
  },
  {
    name: 'max-subarray',
    level: 3,
    make() {
      return {
        signature: 'max_subarray(nums)',
        description: 'returns the largest sum of a non-empty contiguous sub-list of the non-empty integer list `nums`',
        solution: `def max_subarray(nums):\n    best = cur = nums[0]\n    for x in nums[1:]:\n        cur = max(x, cur + x)\n        best = max(best, cur)\n    return best\n`,
        oracle: (nums) => {
          const a = nums as number[];
          let best = a[0]!;
          for (let i = 0; i < a.length; i++) {
            let s = 0;
            for (let j = i; j < a.length; j++) best = Math.max(best, (s += a[j]!));
          }
          return best;
        },
        inputs: (q) => [ints(q, q.int(1, 9), -20, 20)],
      };
    },
  },
  {
    name: 'nth-prime',
    level: 3,
    make() {
      return {
        signature: 'nth_prime(n)',
        description: 'returns the n-th prime number, counting from nth_prime(1) == 2',
        solution:
          `def nth_prime(n):\n    count, k = 0, 1\n    while count < n:\n        k += 1\n        if all(k % d for d in range(2, int(k ** 0.5) + 1)):\n            count += 1\n    return k\n`,
        oracle: (n) => {
          let count = 0;
          let k = 1;
          while (count < (n as number)) {
            k++;
            let prime = true;
            for (let d = 2; d * d <= k; d++) if (k % d === 0) prime = false;
            if (prime) count++;
          }
          return k;
        },
        inputs: (q) => [q.int(1, 200)],
      };
    },
  },
  {
    name: 'two-sum',
    level: 3,
    make() {
      return {
        signature: 'two_sum(nums, target)',
        description: 'returns the indices [i, j] with i < j of the first pair (smallest j, then smallest i) of elements of `nums` that add up to `target`, or [] if there is none',
        solution:
          `def two_sum(nums, target):\n    for j in range(len(nums)):\n        for i in range(j):\n            if nums[i] + nums[j] == target:\n                return [i, j]\n    return []\n`,
        oracle: (nums, target) => {
          const a = nums as number[];
          for (let j = 0; j < a.length; j++) for (let i = 0; i < j; i++) if (a[i]! + a[j]! === target) return [i, j];
          return [];
        },
        inputs: (q) => {
          const a = ints(q, q.int(2, 8), -10, 10);
          const target = q.next() < 0.8 ? a[q.int(0, a.length - 1)]! + a[q.int(0, a.length - 1)]! : 99;
          return [a, target];
        },
      };
    },
  },
];

export const CODE_TEMPLATES = TEMPLATES.map((t) => t.name);

const pyRepr = (v: Json): string => JSON.stringify(v).replace(/\btrue\b/g, 'True').replace(/\bfalse\b/g, 'False');

const TESTS_PER_TASK = 8;

export function codeProblem(r: Rng, level: 1 | 2 | 3): CodeProblem {
  const template = r.pick(TEMPLATES.filter((t) => t.level === level));
  const spec = template.make(r);
  const fnName = spec.signature.slice(0, spec.signature.indexOf('('));
  const seen = new Set<string>();
  const tests: FunctionalTest[] = [];
  for (let attempt = 0; tests.length < TESTS_PER_TASK && attempt < 64; attempt++) {
    const inputs = spec.inputs(r);
    const key = JSON.stringify(inputs);
    if (seen.has(key)) continue;
    seen.add(key);
    tests.push({ type: 'functional', fnName, inputs, output: spec.oracle(...inputs) });
  }
  const example = tests[0]!;
  const call = `${fnName}(${(example.inputs as Json[]).map(pyRepr).join(', ')})`;
  const prompt =
    `Write a Python function \`${spec.signature}\` that ${spec.description}.\n\n` +
    `Example: \`${call}\` returns \`${pyRepr(example.output as Json)}\`.`;
  return { level, generator: template.name, fnName, prompt, solution: spec.solution, tests };
}
