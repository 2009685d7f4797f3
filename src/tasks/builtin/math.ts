// Built-in math problems with exact answers, at four levels: 1 integer arithmetic, 2 fractions,
// 3 linear equations, 4 multi-step word problems. Answers are LaTeX (`42`, `-\frac{5}{6}`).

import type { Rng } from './rng.ts';

export interface MathProblem {
  level: 1 | 2 | 3 | 4;
  generator: string;
  prompt: string;
  answer: string;
  /**
   * The computation behind the answer in plain arithmetic (integers, + - * / and parentheses), so a
   * checker can evaluate it without trusting the generator. Equations carry their coefficients instead.
   */
  expression?: string;
  equation?: { a: number; b: number; c: number; d: number };
}

function gcd(a: number, b: number): number {
  a = Math.abs(a);
  b = Math.abs(b);
  while (b) [a, b] = [b, a % b];
  return a;
}

/** p/q in lowest terms as LaTeX: `3`, `-\frac{5}{6}`. */
export function fractionLatex(p: number, q: number): string {
  if (q === 0) throw new RangeError('fractionLatex: zero denominator');
  if (q < 0) [p, q] = [-p, -q];
  const g = gcd(p, q) || 1;
  p /= g;
  q /= g;
  if (q === 1) return String(p);
  return `${p < 0 ? '-' : ''}\\frac{${Math.abs(p)}}{${q}}`;
}

function arithmetic(r: Rng): MathProblem {
  const op = r.pick(['+', '-', '*'] as const);
  const a = op === '*' ? r.int(2, 30) : r.int(10, 999);
  const b = op === '*' ? r.int(2, 30) : r.int(10, 999);
  const value = op === '+' ? a + b : op === '-' ? a - b : a * b;
  const shown = op === '*' ? '\\times' : op;
  return {
    level: 1,
    generator: 'arithmetic',
    prompt: `Compute $${a} ${shown} ${b}$.`,
    answer: String(value),
    expression: `${a} ${op} ${b}`,
  };
}

function fractions(r: Rng): MathProblem {
  const op = r.pick(['+', '-', '*', '/'] as const);
  const [a, c] = [r.int(1, 9), r.int(1, 9)];
  const [b, d] = [r.int(2, 12), r.int(2, 12)];
  const [p, q] =
    op === '+' ? [a * d + c * b, b * d] : op === '-' ? [a * d - c * b, b * d] : op === '*' ? [a * c, b * d] : [a * d, b * c];
  const shown = { '+': '+', '-': '-', '*': '\\times', '/': '\\div' }[op];
  return {
    level: 2,
    generator: 'fractions',
    prompt: `Compute $\\frac{${a}}{${b}} ${shown} \\frac{${c}}{${d}}$. Give the answer as a fraction in lowest terms (or an integer).`,
    answer: fractionLatex(p, q),
    expression: `(${a}/${b}) ${op} (${c}/${d})`,
  };
}

function linearEquation(r: Rng): MathProblem {
  const a = r.nonzero(-9, 9);
  let c = r.int(-9, 9);
  while (c === a) c = r.int(-9, 9);
  const b = r.int(-20, 20);
  // Half the equations have an integer root; the rest a fractional one.
  const integerRoot = r.next() < 0.5;
  const d = integerRoot ? (a - c) * r.int(-10, 10) + b : r.int(-20, 20);
  const lhs = `${a === 1 ? '' : a === -1 ? '-' : a}x ${b < 0 ? '-' : '+'} ${Math.abs(b)}`;
  const rhs = c === 0 ? String(d) : `${c === 1 ? '' : c === -1 ? '-' : c}x ${d < 0 ? '-' : '+'} ${Math.abs(d)}`;
  return {
    level: 3,
    generator: 'linear-equation',
    prompt: `Solve for $x$: $${lhs} = ${rhs}$.`,
    answer: fractionLatex(d - b, a - c),
    equation: { a, b, c, d },
  };
}

type Word = (r: Rng) => MathProblem;

const NAMES = ['Maya', 'Leo', 'Priya', 'Tomás', 'Aiko', 'Noah', 'Fatima', 'Ivan'];

const WORD_PROBLEMS: Word[] = [
  (r) => {
    const [name, p, q, m, n] = [r.pick(NAMES), r.int(2, 9), r.int(3, 15), r.int(2, 8), r.int(1, 5)];
    const bill = Math.ceil((m * p + n * q + 1) / 10) * 10 + r.pick([0, 10, 20]);
    return word(`A shop sells pencils for ${p} dollars each and notebooks for ${q} dollars each. ${name} buys ${m} pencils and ${n} notebooks and pays with ${bill} dollars. How many dollars of change does ${name} get?`,
      `${bill} - (${m} * ${p} + ${n} * ${q})`, bill - (m * p + n * q));
  },
  (r) => {
    const [v, t1, w, t2] = [r.int(4, 12) * 10, r.int(1, 4), r.int(4, 12) * 10, r.int(1, 4)];
    return word(`A train travels at ${v} km/h for ${t1} hours, then at ${w} km/h for ${t2} hours. What is its average speed over the whole trip, in km/h?`,
      `(${v} * ${t1} + ${w} * ${t2}) / (${t1} + ${t2})`, v * t1 + w * t2, t1 + t2);
  },
  (r) => {
    const [cap, pct, add] = [r.int(2, 20) * 100, r.pick([10, 20, 25, 40, 50, 75]), r.int(1, 9) * 10];
    return word(`A tank holds ${cap} liters when full. It is ${pct}% full, and then ${add} liters are added. How many liters are in the tank now?`,
      `${cap} * ${pct} / 100 + ${add}`, (cap * pct) / 100 + add);
  },
  (r) => {
    const [x, y] = [r.int(20, 90), r.int(1, 19)];
    return word(`The sum of two numbers is ${x + y} and their difference is ${x - y}. What is the larger number?`,
      `(${x + y} + ${x - y}) / 2`, x);
  },
  (r) => {
    const [red, blue, green] = [r.int(1, 12), r.int(1, 12), r.int(0, 6)];
    return word(`A bag holds ${red} red, ${blue} blue and ${green} green marbles. One marble is drawn at random. What is the probability that it is red or green?`,
      `(${red} + ${green}) / (${red} + ${blue} + ${green})`, red + green, red + blue + green);
  },
  (r) => {
    const [rows, perRow, eaten, friends] = [r.int(3, 9), r.int(4, 12), r.int(1, 9), r.int(2, 6)];
    const total = rows * perRow - eaten;
    return word(`${r.pick(NAMES)} bakes ${rows} trays of ${perRow} cookies, eats ${eaten}, and shares the rest equally among ${friends} friends. How many cookies does each friend get?`,
      `(${rows} * ${perRow} - ${eaten}) / ${friends}`, total, friends);
  },
  (r) => {
    const [w, l, price] = [r.int(3, 15), r.int(3, 15), r.int(2, 9)];
    return word(`A rectangular garden is ${w} meters wide and ${l} meters long. Fencing costs ${price} dollars per meter. How many dollars does it cost to fence the whole perimeter?`,
      `2 * (${w} + ${l}) * ${price}`, 2 * (w + l) * price);
  },
];

function word(prompt: string, expression: string, num: number, den = 1): MathProblem {
  return { level: 4, generator: 'word-problem', prompt, answer: fractionLatex(num, den), expression };
}

const BY_LEVEL: Record<1 | 2 | 3 | 4, (r: Rng) => MathProblem> = {
  1: arithmetic,
  2: fractions,
  3: linearEquation,
  4: (r) => r.pick(WORD_PROBLEMS)(r),
};

export function mathProblem(r: Rng, level: 1 | 2 | 3 | 4): MathProblem {
  return BY_LEVEL[level](r);
}
