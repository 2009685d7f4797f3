// Symbolic equivalence of two single expressions with @cortex-js/compute-engine: structural/ canonical
// equality, then numeric evaluation, then (for expressions in free variables) agreement at sample points.
// Every call runs under the engine's deadline, so a pathological answer gives up instead of hanging.

import { ComputeEngine, type Expression } from '@cortex-js/compute-engine';
import { closeEnough, DECIMAL_REL_TOL } from './numeric.ts';

export type SymbolicVerdict = 'equal' | 'different' | 'unparsable' | 'timeout';

/** Agreement tolerance for numeric evaluation of exact expressions (sqrt, pi, logs): floats only differ by rounding. */
const EVAL_REL_TOL = 1e-9;
/** Free-variable values: irrational-ish and away from the usual singular points 0, ±1. */
const SAMPLE_POINTS = [0.5772156649, 1.6180339887, 2.7182818284, -1.4142135623];

let engine: ComputeEngine | null = null;
function ce(): ComputeEngine {
  if (engine === null) {
    engine = new ComputeEngine();
    // isEqual's default absolute tolerance (1e-10) calls 10^{-11} equal to 0: compare exactly here and
    // apply this module's relative tolerances to evaluated values instead.
    engine.tolerance = 0;
  }
  return engine;
}

/** A float value of `e` when it is a real number floats represent faithfully, else null. */
function numericValue(e: Expression): number | null {
  const n = e.N();
  const { re, im } = n;
  if (Number.isNaN(re)) return null;
  // Overflow (10^{10^{10}} -> Infinity), underflow (1e-999 -> 0) and infinities: floats would call
  // unequal values equal, so only the structural comparison may decide these.
  if (!Number.isFinite(re) || (re !== 0 && (Math.abs(re) > 1e300 || Math.abs(re) < 1e-300))) return null;
  if (!Number.isNaN(im) && Math.abs(im) > 1e-12 * Math.max(1, Math.abs(re))) return null;
  return re;
}

function compare(a: string, b: string): SymbolicVerdict {
  const engineRef = ce();
  const ea = engineRef.parse(a);
  const eb = engineRef.parse(b);
  if (!ea.isValid || !eb.isValid) return 'unparsable';
  if (ea.isSame(eb) || ea.isEqual(eb) === true) return 'equal';
  const va = numericValue(ea);
  const vb = numericValue(eb);
  // A side written with a decimal point is itself approximate: compare to the decimal tolerance.
  const tol = /\d\.\d/.test(a + ' ' + b) ? DECIMAL_REL_TOL : EVAL_REL_TOL;
  if (va !== null && vb !== null) {
    // At 0 relative tolerance is meaningless and floats underflow (10^{-400} -> 0): only exact
    // evaluation may call a value 0 (\sin(\pi) is, 10^{-400} is not).
    if (va === 0 || vb === 0) return ea.evaluate().isSame(eb.evaluate()) ? 'equal' : 'different';
    return closeEnough(va, vb, tol) ? 'equal' : 'different';
  }
  if (va !== null || vb !== null) return 'different';
  const ua = [...ea.unknowns].sort();
  const ub = [...eb.unknowns].sort();
  if (ua.length === 0 || ua.join(',') !== ub.join(',')) return 'different';
  let compared = 0;
  for (const x of SAMPLE_POINTS) {
    const subs: Record<string, Expression> = {};
    ua.forEach((name, k) => (subs[name] = engineRef.number(x + 0.1 * k)));
    const sa = numericValue(ea.subs(subs));
    const sb = numericValue(eb.subs(subs));
    if (sa === null && sb === null) continue; // outside both domains (log of a negative, ...)
    if (sa === null || sb === null || !closeEnough(sa, sb, 1e-7)) return 'different';
    compared++;
  }
  return compared >= 2 ? 'equal' : 'different';
}

let warm = false;

/**
 * Builds the engine and runs one comparison, so the first real check is not charged for loading the
 * engine's libraries (hundreds of ms on a busy CPU). Idempotent; gradeMath calls it outside its budget.
 */
export function warmUpSymbolic(): void {
  if (warm) return;
  compare('\\sqrt{8}+\\frac{\\pi}{2}', '2\\sqrt{2}+\\pi/2');
  compare('x^2+2x+1', '(x+1)^2');
  warm = true;
}

/** Compare two LaTeX expressions, giving up after `timeoutMs`. */
export function symbolicEqual(a: string, b: string, timeoutMs: number): SymbolicVerdict {
  if (timeoutMs <= 0) return 'timeout';
  const deadline = Date.now() + timeoutMs;
  try {
    const verdict = ce().withTimeLimit(timeoutMs, () => compare(a, b));
    return Date.now() > deadline ? 'timeout' : verdict;
  } catch (err) {
    if (err instanceof Error && err.name === 'CancellationError') return 'timeout';
    return 'unparsable';
  }
}
