// Plain numbers in normalised answers, as exact rationals (BigInt): integers, decimals, scientific
// notation, a/b and \frac{a}{b} with optional signs. Anything else is left to the symbolic check.

export interface Rational {
  num: bigint;
  den: bigint; // > 0, gcd(num, den) = 1
  /** Written with a decimal point or exponent: compared to a tolerance when not exactly equal. */
  decimal: boolean;
}

/** Relative tolerance for answers written as decimals ("0.3333333" for 1/3, "3.1415927" for pi). */
export const DECIMAL_REL_TOL = 1e-6;

const DECIMAL = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(?:(?:e|E|\\times10\^|\\cdot10\^|\*10\^)\{?([+-]?\d+)\}?)?$/;

function gcd(a: bigint, b: bigint): bigint {
  a = a < 0n ? -a : a;
  b = b < 0n ? -b : b;
  while (b !== 0n) [a, b] = [b, a % b];
  return a;
}

export function rational(num: bigint, den: bigint, decimal: boolean): Rational | null {
  if (den === 0n) return null;
  if (den < 0n) [num, den] = [-num, -den];
  const g = gcd(num, den) || 1n;
  return { num: num / g, den: den / g, decimal };
}

function parseDecimal(s: string): Rational | null {
  const m = DECIMAL.exec(s);
  if (!m) return null;
  const [, sign, body, exp] = m as unknown as [string, string, string, string | undefined];
  const [int, frac = ''] = body.split('.') as [string, string?];
  if (frac.length + Math.abs(Number(exp ?? 0)) > 5000) return null;
  let num = BigInt((int || '0') + frac);
  let den = 10n ** BigInt(frac.length);
  const e = Number(exp ?? 0);
  if (e > 0) num *= 10n ** BigInt(e);
  if (e < 0) den *= 10n ** BigInt(-e);
  if (sign === '-') num = -num;
  return rational(num, den, frac !== '' || body.includes('.') || exp !== undefined);
}

/** An exact rational for a normalised answer that is a plain number or a quotient of two, else null. */
export function parseRational(s: string): Rational | null {
  const direct = parseDecimal(s);
  if (direct) return direct;
  const frac = /^([+-]?)\\frac\{([^{}]+)\}\{([^{}]+)\}$/.exec(s);
  const slash = frac ? null : /^([+-]?)\(?([^/()]+)\)?\/\(?([^/()]+)\)?$/.exec(s);
  const m = frac ?? slash;
  if (!m) return null;
  const p = parseDecimal(m[2]!);
  const q = parseDecimal(m[3]!);
  if (!p || !q || q.num === 0n) return null;
  const r = rational(p.num * q.den, p.den * q.num, p.decimal || q.decimal);
  if (r && m[1] === '-') r.num = -r.num;
  return r;
}

export function rationalEqual(a: Rational, b: Rational): boolean {
  return a.num === b.num && a.den === b.den;
}

const abs = (x: bigint): bigint => (x < 0n ? -x : x);

/** |a - b| <= relTol * max(|a|, |b|), in exact arithmetic (no float overflow or underflow). */
export function rationalClose(a: Rational, b: Rational, relTol = DECIMAL_REL_TOL): boolean {
  const scale = 10n ** 12n;
  const tol = BigInt(Math.round(relTol * 1e12));
  const x = a.num * b.den;
  const y = b.num * a.den;
  const big = abs(x) > abs(y) ? abs(x) : abs(y);
  return abs(x - y) * scale <= tol * big;
}

export function closeEnough(a: number, b: number, relTol = DECIMAL_REL_TOL): boolean {
  if (!Number.isFinite(a) || !Number.isFinite(b)) return a === b;
  return Math.abs(a - b) <= relTol * Math.max(Math.abs(a), Math.abs(b));
}
