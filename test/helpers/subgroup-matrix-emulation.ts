// A tensor-core shader made runnable on the CPU drivers, which have no subgroup matrices: its matrix types and
// builtins are replaced by an emulation in plain WGSL, with the semantics Dawn documents
// (docs/dawn/features/subgroup_matrix.md): a 16 x 16 fragment spread over a subgroup's 32 invocations, each
// holding 8 consecutive elements of it row-major (a left fragment is rows x depth, a right one depth x columns, a
// result rows x columns); loads and stores take (offset, column-major, stride); a multiply-accumulate passes both
// inputs through workgroup memory, one 512-float scratch per subgroup, between two barriers, so it must be called
// in workgroup-uniform control flow (the real builtin needs subgroup-uniform: the stricter rule is checked here).
// subgroup_id and subgroup_invocation_id come from the local invocation index (SG = 32, threads fill subgroups in
// order). Each array (workgroup or storage) a fragment is loaded from or stored to gets its own functions (WGSL
// passes no workgroup pointers to functions), with the element type its declaration gives.
// Used by the attention tests (test/helpers/wgsl-run.ts, emulatedAttentionTc) and matmul-tc-direct-emulated.test.ts;
// matmul-tc-emulated.test.ts keeps its own, older stand-in.

type Kind = 'left' | 'right' | 'result';

function loadFn(kind: Kind, array: string): string {
  // (row, col) of element e of the row-major fragment; which of them runs along the stride
  const [first, second] = kind === 'right' ? ['k', 'n'] : ['r', 'c'];
  return `fn emuLoad_${kind}_${array}(offset: u32, colMajor: bool, stride: u32) -> EmuFragment {
  var f: EmuFragment;
  for (var i = 0u; i < 8u; i++) {
    let ${first} = (emuLane * 8u + i) / 16u;
    let ${second} = (emuLane * 8u + i) % 16u;
    f[i] = f32(${array}[select(offset + ${first} * stride + ${second}, offset + ${second} * stride + ${first}, colMajor)]);
  }
  return f;
}
`;
}

function storeFn(array: string, elem: string): string {
  return `fn emuStore_${array}(offset: u32, v: EmuFragment, colMajor: bool, stride: u32) {
  for (var i = 0u; i < 8u; i++) {
    let r = (emuLane * 8u + i) / 16u;
    let c = (emuLane * 8u + i) % 16u;
    ${array}[select(offset + r * stride + c, offset + c * stride + r, colMajor)] = ${elem}(v[i]);
  }
}
`;
}

const CORE = (subgroups: number) => `
alias EmuFragment = array<f32, 8>;
var<private> emuLane: u32;
var<private> emuSid: u32;
var<workgroup> emuScratch: array<f32, ${subgroups}u * 512u>;
fn emuMma(l: EmuFragment, r: EmuFragment, c: EmuFragment) -> EmuFragment {
  let base = emuSid * 512u;
  for (var i = 0u; i < 8u; i++) {
    emuScratch[base + emuLane * 8u + i] = l[i];
    emuScratch[base + 256u + emuLane * 8u + i] = r[i];
  }
  workgroupBarrier();
  var o = c;
  for (var i = 0u; i < 8u; i++) {
    let row = (emuLane * 8u + i) / 16u;
    let col = (emuLane * 8u + i) % 16u;
    for (var k = 0u; k < 16u; k++) { o[i] += emuScratch[base + row * 16u + k] * emuScratch[base + 256u + k * 16u + col]; }
  }
  workgroupBarrier();
  return o;
}
`;

/** Each subgroupMatrixLoad<T[, majorness]>(…) and subgroupMatrixStore[<majorness>](…) call in `code` replaced by
 * `rewrite(template, args)`: template is "T[, majorness]" for a load, "store[, majorness]" for a store; args are the
 * call's top-level arguments. */
function rewriteCalls(code: string, rewrite: (template: string, args: string[]) => string): string {
  const call = /subgroupMatrix(Load|Store)(?:<([^>]*)>)?\(/g;
  let out = '';
  let from = 0;
  for (let m = call.exec(code); m; m = call.exec(code)) {
    const args: string[] = [];
    let depth = 0;
    let arg = '';
    let i = m.index + m[0].length;
    for (; i < code.length; i++) {
      const ch = code[i]!;
      if (depth === 0 && (ch === ',' || ch === ')')) {
        args.push(arg.trim());
        arg = '';
        if (ch === ')') break;
        continue;
      }
      if (ch === '(') depth++;
      if (ch === ')') depth--;
      arg += ch;
    }
    const template = m[1] === 'Store' ? ['store', m[2]].filter(Boolean).join(', ') : m[2]!;
    out += code.slice(from, m.index) + rewrite(template, args);
    from = i + 1;
    call.lastIndex = from;
  }
  return out + code.slice(from);
}

/** `source` (a shader using subgroup matrices, without its `enable` lines) with them emulated for a workgroup of
 * `subgroups` subgroups of 32. An entry point that takes subgroup_id or subgroup_invocation_id must take
 * @builtin(local_invocation_index) too; they become lets of the same names. */
export function emulateSubgroupMatrices(source: string, subgroups: number): string {
  const kinds = new Map<string, Kind>();
  let code = source.replace(/alias (\w+) = subgroup_matrix_(left|right|result)<[^>]*>;/g, (_, name: string, kind: Kind) => {
    kinds.set(name, kind);
    return `alias ${name} = EmuFragment;`;
  });
  const elemOf = (array: string) => {
    const m = new RegExp(`var<(?:workgroup|storage[^>]*)>\\s+${array}\\s*:\\s*array<(\\w+)`).exec(source);
    if (!m) throw new Error(`emulation: no workgroup or storage array ${array}`);
    return m[1]!;
  };
  const loads = new Set<string>();
  const stores = new Set<string>();
  code = rewriteCalls(code, (template, args) => {
    // Dawn's two forms: majorness as a bool argument before the stride, or as a template argument
    const [what, major] = template.split(',').map((x) => x.trim());
    const [pointer, offset, ...rest] = args;
    const array = /^&(\w+)$/.exec(pointer ?? '')?.[1];
    if (!array) throw new Error(`emulation: a fragment must come from a named workgroup or storage array, got ${pointer}`);
    elemOf(array);
    const colMajor = major === undefined ? rest.splice(rest.length - 2, 1)[0]! : String(major === 'col_major');
    if (what === 'store') {
      stores.add(array);
      const [value, stride] = rest;
      return `emuStore_${array}(${offset}, ${value}, ${colMajor}, ${stride})`;
    }
    const kind = kinds.get(what);
    if (!kind) throw new Error(`emulation: ${what} is not a subgroup matrix alias`);
    loads.add(`${kind} ${array}`);
    return `emuLoad_${kind}_${array}(${offset}, ${colMajor}, ${rest[0]})`;
  });
  code = code.replace(/subgroupMatrixMultiplyAccumulate\(/g, 'emuMma(');
  // Every entry point that takes subgroup_id or subgroup_invocation_id gets them from its local invocation index.
  code = code.replace(/(@compute @workgroup_size\([^)]*\)\s*fn \w+\()([\s\S]*?)(\)\s*\{)/g, (whole, open: string, params: string, close: string) => {
    if (!/subgroup_id|subgroup_invocation_id/.test(params)) return whole;
    const index = /@builtin\(local_invocation_index\) (\w+): u32/.exec(params)?.[1];
    if (!index) throw new Error('emulation: an entry point with subgroup builtins must take local_invocation_index');
    const sid = /@builtin\(subgroup_id\) (\w+): u32/.exec(params)?.[1];
    const lane = /@builtin\(subgroup_invocation_id\) (\w+): u32/.exec(params)?.[1];
    const kept = params.replace(/@builtin\(subgroup_(id|invocation_id)\) \w+: u32,?\s*/g, '').replace(/,\s*$/, '');
    const lets = [`emuSid = ${index} / 32u;`, `emuLane = ${index} % 32u;`];
    if (sid) lets.push(`let ${sid} = emuSid;`);
    if (lane) lets.push(`let ${lane} = emuLane;`);
    return `${open}${kept}${close}\n  ${lets.join('\n  ')}`;
  });
  if (/subgroup_matrix|subgroupMatrix|subgroup_id|subgroup_invocation_id/.test(code)) throw new Error('emulation: a subgroup matrix call or builtin is left');
  const fns = [...loads].map((l) => loadFn(...(l.split(' ') as [Kind, string]))).concat([...stores].map((a) => storeFn(a, elemOf(a))));
  return code.replace(/(@compute @workgroup_size)/, `${CORE(subgroups)}${fns.join('')}\n$1`);
}
