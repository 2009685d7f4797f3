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
});
