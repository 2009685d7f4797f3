// Conditional blocks in WGSL source, resolved against a variant's constants before compiling: a line
// `#if NAME` (or `#if !NAME`), `#else`, `#endif` alone on its line. WGSL counts every binding a function
// mentions as used, even under `if (false)`, so a variant that binds fewer buffers (or needs no `enable`)
// must not contain the code at all. NAME must be a const of the variant (true when it is true or non-zero).
// `#unroll NAME COUNT` … `#endunroll` writes the lines between COUNT times, NAME (a whole word) replaced by 0u, 1u, …
// in each copy; COUNT is an integer expression of literals and the variant's consts (+ - * / and parentheses; a
// bool counts 1 or 0). Why: wgpu (Deno) compiles every loop with an injected iteration bound
// (ShaderRuntimeChecks::force_loop_bounding, which its JavaScript API cannot turn off), and on an H100 the
// driver then left such loops rolled, their small arrays in local memory: the decode attention ran 2.3x and the f32
// tiles 1.2-1.4x slower under Deno than the same WGSL under Dawn (bench/RESULTS.md, 2026-12-07 22:58-23:16). Copies go on
// the #endunroll line (comments dropped), so the lines after keep their numbers.
export class ShaderPreprocessError extends Error {
  override name = 'ShaderPreprocessError';
}

const DIRECTIVE = /^\s*#(if|else|endif)\b\s*(!?)\s*([A-Za-z_][A-Za-z0-9_]*)?\s*$/;
const UNROLL = /^\s*#(unroll|endunroll)\b(.*)$/;

export function preprocessWgsl(source: string, consts: Record<string, number | boolean>, where = 'shader'): string {
  if (!source.includes('#')) return source;
  return unroll(conditionals(source, consts, where), consts, where);
}

function conditionals(source: string, consts: Record<string, number | boolean>, where: string): string {
  const out: string[] = [];
  // Per open #if: whether its current branch is kept, and whether the enclosing text is.
  const stack: { keep: boolean; outer: boolean; seenElse: boolean }[] = [];
  let keep = true;
  source.split('\n').forEach((line, i) => {
    const m = DIRECTIVE.exec(line);
    if (!m) {
      if (/^\s*#/.test(line) && !UNROLL.test(line)) throw new ShaderPreprocessError(`${where}:${i + 1}: unknown directive ${line.trim()}`);
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

/** Expands the #unroll blocks of text whose #if blocks are resolved (line for line with the source). */
function unroll(source: string, consts: Record<string, number | boolean>, where: string): string {
  if (!source.includes('#unroll') && !source.includes('#endunroll')) return source;
  const lines = source.split('\n');
  const out: string[] = [];
  // Open blocks: the loop's name and count, where it starts, and its body so far (inner blocks already expanded).
  const stack: { name: string; count: number; line: number; body: string[] }[] = [];
  const emit = (text: string) => (stack.length ? stack[stack.length - 1]!.body.push(text) : out.push(text));
  lines.forEach((line, i) => {
    const m = UNROLL.exec(line);
    if (!m) {
      emit(line.replace(/\/\/.*$/, stack.length ? '' : '$&'));
      if (stack.length) out.push('');
      return;
    }
    const at = `${where}:${i + 1}`;
    if (m[1] === 'unroll') {
      const args = /^\s+([A-Za-z_][A-Za-z0-9_]*)\s+(.+?)\s*$/.exec(m[2]!);
      if (!args) throw new ShaderPreprocessError(`${at}: #unroll needs a name and a count`);
      const count = evalCount(args[2]!, consts, at);
      stack.push({ name: args[1]!, count, line: i + 1, body: [] });
      out.push('');
      return;
    }
    const block = stack.pop();
    if (!block || m[2]!.trim()) throw new ShaderPreprocessError(`${at}: stray #endunroll`);
    const word = new RegExp(`\\b${block.name}\\b`, 'g');
    const copies: string[] = [];
    for (let k = 0; k < block.count; k++) copies.push(block.body.map((l) => l.replace(word, `${k}u`).trim()).filter(Boolean).join(' '));
    // An inner block's copies land on its parent's body; the outermost goes on this line.
    if (stack.length) {
      stack[stack.length - 1]!.body.push(copies.join(' '));
      out.push('');
    } else {
      out.push(copies.join(' '));
    }
  });
  if (stack.length) throw new ShaderPreprocessError(`${where}:${stack[stack.length - 1]!.line}: #unroll without #endunroll`);
  return out.join('\n');
}

/** An #unroll count: integers, the variant's consts (a bool is 1 or 0), + - * / (integer division) and parentheses. */
function evalCount(text: string, consts: Record<string, number | boolean>, at: string): number {
  const tokens = text.match(/\d+|[A-Za-z_][A-Za-z0-9_]*|[-+*/()]|\S/g) ?? [];
  let i = 0;
  const fail = (why: string): never => {
    throw new ShaderPreprocessError(`${at}: #unroll count "${text}": ${why}`);
  };
  const atom = (): number => {
    const t = tokens[i++];
    if (t === undefined) return fail('ends early');
    if (t === '(') {
      const v = sum();
      if (tokens[i++] !== ')') fail('a ( without )');
      return v;
    }
    if (/^\d+$/.test(t)) return Number(t);
    if (/^[A-Za-z_]/.test(t)) {
      if (!(t in consts)) fail(`the variant has no constant ${t}`);
      return Number(consts[t]);
    }
    return fail(`unexpected ${t}`);
  };
  const product = (): number => {
    let v = atom();
    while (tokens[i] === '*' || tokens[i] === '/') v = tokens[i++] === '*' ? v * atom() : Math.trunc(v / atom());
    return v;
  };
  const sum = (): number => {
    let v = product();
    while (tokens[i] === '+' || tokens[i] === '-') v = tokens[i++] === '+' ? v + product() : v - product();
    return v;
  };
  const v = sum();
  if (i < tokens.length) fail(`unexpected ${tokens[i]}`);
  if (!Number.isInteger(v) || v < 0 || v > 256) fail(`${v} is not a whole number of copies from 0 to 256`);
  return v;
}
