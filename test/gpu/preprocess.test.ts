import { describe, expect, it } from 'vitest';
import { preprocessWgsl, ShaderPreprocessError } from '../../src/gpu/preprocess.ts';

const SRC = ['a', '#if X', 'x', '#if !Y', 'x not y', '#else', 'x y', '#endif', '#else', 'not x', '#endif', 'b'].join('\n');

describe('preprocessWgsl', () => {
  it('keeps the branches the constants choose, nested, and blanks the rest so line numbers hold', () => {
    const keep = (consts: Record<string, number | boolean>) => preprocessWgsl(SRC, consts).split('\n');
    expect(keep({ X: true, Y: false })).toEqual(['a', '', 'x', '', 'x not y', '', '', '', '', '', '', 'b']);
    expect(keep({ X: 1, Y: 2 })).toEqual(['a', '', 'x', '', '', '', 'x y', '', '', '', '', 'b']);
    expect(keep({ X: 0, Y: true })).toEqual(['a', '', '', '', '', '', '', '', '', 'not x', '', 'b']);
    expect(preprocessWgsl('no directives', {})).toBe('no directives');
  });

  it('names the file and line of a bad directive', () => {
    const bad = (src: string, consts: Record<string, number | boolean> = { X: true }) => () => preprocessWgsl(src, consts, 'shaders/t.wgsl');
    expect(bad('#if Z\n#endif')).toThrow(/shaders\/t.wgsl:1: #if Z: the variant has no constant Z/);
    expect(bad('a\n#endif')).toThrow(/shaders\/t.wgsl:2: stray #endif/);
    expect(bad('#if X\n#else\n#else\n#endif')).toThrow(/:3: a second #else/);
    expect(bad('#if X\nx')).toThrow(/1 #if without #endif/);
    expect(bad('#ifdef X')).toThrow(ShaderPreprocessError);
    expect(bad('#if')).toThrow(/#if needs a constant's name/);
  });

  it('unrolls #unroll blocks: copies with the name replaced, nested, on the #endunroll line', () => {
    const src = ['a', '#unroll r G', 'x[r] += y[r]; // a comment', '#endunroll', 'b'].join('\n');
    expect(preprocessWgsl(src, { G: 3 }).split('\n')).toEqual(['a', '', '', 'x[0u] += y[0u]; x[1u] += y[1u]; x[2u] += y[2u];', 'b']);
    // A whole word only; counts from expressions of the consts (a bool is 1 or 0); zero copies leave nothing.
    const expr = ['#unroll c HD / (4 + 4 * F16)', 'v[c] = cc + c;', '#endunroll'].join('\n');
    expect(preprocessWgsl(expr, { HD: 16, F16: true })).toBe('\n\nv[0u] = cc + 0u; v[1u] = cc + 1u;');
    expect(preprocessWgsl(expr, { HD: 8, F16: false })).toBe('\n\nv[0u] = cc + 0u; v[1u] = cc + 1u;');
    expect(preprocessWgsl(expr, { HD: 0, F16: false })).toBe('\n\n');
    const nested = ['#unroll i 2', 'p(i);', '#unroll j 2', 'q(i, j);', '#endunroll', '#endunroll', 'end'].join('\n');
    expect(preprocessWgsl(nested, {}).split('\n')).toEqual(['', '', '', '', '', 'p(0u); q(0u, 0u); q(0u, 1u); p(1u); q(1u, 0u); q(1u, 1u);', 'end']);
    // Inside a dropped #if branch an #unroll is dropped with it.
    expect(preprocessWgsl(['#if X', '#unroll r 2', 'r;', '#endunroll', '#endif'].join('\n'), { X: false })).toBe('\n\n\n\n');
  });

  it('names the file and line of a bad #unroll', () => {
    const bad = (src: string) => () => preprocessWgsl(src, { G: 2, H: 2.5 }, 'shaders/t.wgsl');
    expect(bad('#unroll r Z\n#endunroll')).toThrow(/shaders\/t.wgsl:1: #unroll count "Z": the variant has no constant Z/);
    expect(bad('#unroll r H\n#endunroll')).toThrow(/2.5 is not a whole number of copies/);
    expect(bad('#unroll r (G\n#endunroll')).toThrow(/a \( without \)/);
    expect(bad('#unroll r\n#endunroll')).toThrow(/:1: #unroll needs a name and a count/);
    expect(bad('x\n#unroll r G\nx')).toThrow(/shaders\/t.wgsl:2: #unroll without #endunroll/);
    expect(bad('#endunroll')).toThrow(/:1: stray #endunroll/);
  });
});
