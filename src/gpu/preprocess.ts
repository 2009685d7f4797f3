// Conditional blocks in WGSL source, resolved against a variant's constants before compiling: a line
// `#if NAME` (or `#if !NAME`), `#else`, `#endif` alone on its line. WGSL counts every binding a function
// mentions as used, even under `if (false)`, so a variant that binds fewer buffers (or needs no `enable`)
// must not contain the code at all. NAME must be a const of the variant (true when it is true or non-zero).
export class ShaderPreprocessError extends Error {
  override name = 'ShaderPreprocessError';
}

const DIRECTIVE = /^\s*#(if|else|endif)\b\s*(!?)\s*([A-Za-z_][A-Za-z0-9_]*)?\s*$/;

export function preprocessWgsl(source: string, consts: Record<string, number | boolean>, where = 'shader'): string {
  if (!source.includes('#')) return source;
  const out: string[] = [];
  // Per open #if: whether its current branch is kept, and whether the enclosing text is.
  const stack: { keep: boolean; outer: boolean; seenElse: boolean }[] = [];
  let keep = true;
  source.split('\n').forEach((line, i) => {
    const m = DIRECTIVE.exec(line);
    if (!m) {
      if (/^\s*#/.test(line)) throw new ShaderPreprocessError(`${where}:${i + 1}: unknown directive ${line.trim()}`);
      // Dropped lines stay as empty ones, so compiler messages keep their line numbers.
      out.push(keep ? line : '');
      return;
    }
    const [, word, not, name] = m;
    if (word === 'if') {
      if (!name) throw new ShaderPreprocessError(`${where}:${i + 1}: #if needs a constant's name`);
      if (!(name in consts)) throw new ShaderPreprocessError(`${where}:${i + 1}: #if ${name}: the variant has no constant ${name}`);
      const value = Boolean(consts[name]) !== (not === '!');
      stack.push({ keep: value, outer: keep, seenElse: false });
      keep = keep && value;
    } else {
      const top = stack[stack.length - 1];
      if (!top || name || not) throw new ShaderPreprocessError(`${where}:${i + 1}: stray #${word}${name ? ` ${name}` : ''}`);
      if (word === 'else') {
        if (top.seenElse) throw new ShaderPreprocessError(`${where}:${i + 1}: a second #else`);
        top.seenElse = true;
        top.keep = !top.keep;
        keep = top.outer && top.keep;
      } else {
        stack.pop();
        keep = top.outer;
      }
    }
    out.push('');
  });
  if (stack.length) throw new ShaderPreprocessError(`${where}: ${stack.length} #if without #endif`);
  return out.join('\n');
}
