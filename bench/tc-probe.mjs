// Raw subgroup-matrix throughput under Dawn (a probe for tuning shaders/matmul_tc_tiled.wgsl, not a benchmark
// row): each subgroup multiplies fragments already in registers in ACC independent chains, so nothing but the
// multiply-accumulates (and how Tint/the driver keep the accumulators) is timed. Variants: accumulators as
// named variables or as an array indexed in loops; f32 or f16 accumulation; fragments re-loaded from
// workgroup memory every step or not. `direct`: a whole f16 x·Wᵀ product (4096^3) whose 2 x 2 subgroups of
// 4 x 4 named accumulators load their fragments straight from storage, no workgroup memory.
// `parts`: shaders/matmul_tc_tiled.wgsl at 8192x3072x1024 (f32 x, f16 W), whole and with its workgroup-memory
// fill, its products or its K-loop barriers cut out, to see which part costs the time (without the epilogue
// nothing is written and the compiler drops the whole kernel, so that cut is not offered). `layout`: the same kernel
// with its row padding changed, unused workgroup memory declared, or its results stored straight to out. `ramp`:
// how long the GPU takes from idle to its clock. `rows`: shaders/matmul_tc_direct.wgsl at 256 rows (the rollout's
// products), both versions, whole and with a part cut out (version 2: its staging stores, its products, its K-loop
// barriers). Times are GPU timestamps after WARM_MS (env, default 400) of work.
//   usage (GPU machine): node bench/tc-probe.mjs [registers|direct|parts|ramp|layout|rows]
import { create, globals } from 'webgpu';

Object.assign(globalThis, globals);
const gpu = create(['enable-dawn-features=allow_unsafe_apis,vulkan_enable_f16_on_nvidia']);
const adapter = await gpu.requestAdapter();
const device = await adapter.requestDevice({ requiredFeatures: ['shader-f16', 'subgroups', 'chromium-experimental-subgroup-matrix', 'timestamp-query'], requiredLimits: { maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize, maxBufferSize: adapter.limits.maxBufferSize, maxComputeWorkgroupStorageSize: adapter.limits.maxComputeWorkgroupStorageSize, maxComputeInvocationsPerWorkgroup: adapter.limits.maxComputeInvocationsPerWorkgroup, maxComputeWorkgroupSizeX: adapter.limits.maxComputeWorkgroupSizeX } });
device.addEventListener('uncapturederror', (e) => console.log('error', e.error.message));

const ITER = 2048;
const WORKGROUPS = 132 * 16;

function shader({ acc, named, resT, reload }) {
  const decl = named ? Array.from({ length: acc }, (_, i) => `var c${i} = R();`).join('\n  ') : `var c: array<R, ${acc}>;\n  for (var i = 0u; i < ${acc}u; i++) { c[i] = R(); }`;
  const step = named ? Array.from({ length: acc }, (_, i) => `c${i} = subgroupMatrixMultiplyAccumulate(a, b, c${i});`).join('\n    ') : `for (var i = 0u; i < ${acc}u; i++) { c[i] = subgroupMatrixMultiplyAccumulate(a, b, c[i]); }`;
  const store = named ? Array.from({ length: acc }, (_, i) => `subgroupMatrixStore<row_major>(&out, sid * ${acc * 256}u + ${i * 256}u, c${i}, 16u);`).join('\n  ') : `for (var i = 0u; i < ${acc}u; i++) { subgroupMatrixStore<row_major>(&out, sid * ${acc * 256}u + i * 256u, c[i], 16u); }`;
  return `enable f16;
enable chromium_experimental_subgroup_matrix;
alias L = subgroup_matrix_left<f16, 16, 16>;
alias Rt = subgroup_matrix_right<f16, 16, 16>;
alias R = subgroup_matrix_result<${resT}, 16, 16>;
@group(0) @binding(0) var<storage, read> src: array<f16>;
@group(0) @binding(1) var<storage, read_write> out: array<${resT}>;
var<workgroup> tile: array<f16, 4096>;
@compute @workgroup_size(128)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(subgroup_id) sid: u32, @builtin(local_invocation_index) lid: u32) {
  for (var e = lid; e < 4096u; e += 128u) { tile[e] = src[e]; }
  workgroupBarrier();
  var a = subgroupMatrixLoad<L, row_major>(&src, 0u, 16u);
  var b = subgroupMatrixLoad<Rt, row_major>(&src, 256u, 16u);
  ${decl}
  for (var t = 0u; t < ${ITER}u; t++) {
    ${reload ? 'a = subgroupMatrixLoad<L, row_major>(&tile, (t % 8u) * 512u, 32u);\n    b = subgroupMatrixLoad<Rt, col_major>(&tile, (t % 8u) * 512u + 16u, 32u);' : ''}
    ${step}
  }
  ${store}
}`;
}

/** The compute pipeline of `code` (entry main), or null after printing its first compile error. */
async function pipelineOf(code, what) {
  const module = device.createShaderModule({ code });
  const error = (await module.getCompilationInfo()).messages.find((m) => m.type === 'error');
  if (error) { console.log(`${what}: ${error.message}`); return null; }
  return device.createComputePipelineAsync({ layout: 'auto', compute: { module, entryPoint: 'main' } });
}

const WARM_MS = Number(process.env.WARM_MS ?? 400);
const querySet = device.createQuerySet({ type: 'timestamp', count: 2 });
const resolved = device.createBuffer({ size: 16, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });
const readback = device.createBuffer({ size: 16, usage: GPUBufferUsage.COPY_DST | GPUBufferUsage.MAP_READ });
/** GPU seconds per dispatch of `workgroups` (timestamps around one pass of `n` dispatches, after `warm` untimed
 * dispatches), and the wall clock's (submit to done): the two part where the host or the waiting costs. */
async function timesPerDispatch(pipeline, bindGroup, workgroups, n, warm = 2, warmMs = WARM_MS) {
  const run = async (count, timed) => {
    const enc = device.createCommandEncoder();
    const p = enc.beginComputePass(timed ? { timestampWrites: { querySet, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 } } : {});
    p.setPipeline(pipeline);
    p.setBindGroup(0, bindGroup);
    for (let i = 0; i < count; i++) p.dispatchWorkgroups(...workgroups);
    p.end();
    if (timed) { enc.resolveQuerySet(querySet, 0, 2, resolved, 0); enc.copyBufferToBuffer(resolved, 0, readback, 0, 16); }
    device.queue.submit([enc.finish()]);
    await device.queue.onSubmittedWorkDone();
  };
  // The clock: an H100 left idle for a second drops from 1980 MHz towards 345 (nvidia-smi, 2026-12-06) and a few
  // dispatches do not bring it back, so untimed work runs for WARM_MS right before the timed pass.
  const w0 = performance.now();
  if (warm > 0) do await run(warm, false); while (performance.now() - w0 < warmMs);
  const t0 = performance.now();
  await run(n, true);
  const wall = (performance.now() - t0) / n / 1e3;
  await readback.mapAsync(GPUMapMode.READ);
  const [start, end] = new BigUint64Array(readback.getMappedRange().slice(0));
  readback.unmap();
  return { gpu: Number(end - start) / 1e9 / n, wall };
}

/** One timed pass of n dispatches, no warm-up. */
async function timesPerDispatchRaw(pipeline, bindGroup, workgroups, n) {
  return timesPerDispatch(pipeline, bindGroup, workgroups, n, 0, 0);
}

/** Seconds per dispatch (GPU time). */
async function secondsPerDispatch(pipeline, bindGroup, workgroups, n, warm = 2) {
  return (await timesPerDispatch(pipeline, bindGroup, workgroups, n, warm)).gpu;
}

async function time(code, acc) {
  const pipeline = await pipelineOf(code, `registers x${acc}`);
  if (!pipeline) return NaN;
  const src = device.createBuffer({ size: 8192, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
  device.queue.writeBuffer(src, 0, new Uint16Array(4096).fill(0x3c00 >> 4));
  const out = device.createBuffer({ size: 4 * acc * 256 * 4, usage: GPUBufferUsage.STORAGE });
  const bg = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: [{ binding: 0, resource: { buffer: src } }, { binding: 1, resource: { buffer: out } }] });
  const s = await secondsPerDispatch(pipeline, bg, [WORKGROUPS], 5, 1);
  src.destroy(); out.destroy();
  return (WORKGROUPS * 4 * ITER * acc * 2 * 16 ** 3) / s / 1e12;
}

const what = process.argv[2] ?? 'registers';

function directShader(K) {
  const acc = [];
  for (let i = 0; i < 4; i++) for (let j = 0; j < 4; j++) acc.push([i, j]);
  return `enable f16;
enable chromium_experimental_subgroup_matrix;
alias L = subgroup_matrix_left<f16, 16, 16>;
alias Rt = subgroup_matrix_right<f16, 16, 16>;
alias R = subgroup_matrix_result<f32, 16, 16>;
@group(0) @binding(0) var<storage, read> x: array<f16>;
@group(0) @binding(1) var<storage, read> w: array<f16>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
const K = ${K}u;
@compute @workgroup_size(128)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(subgroup_id) sid: u32) {
  let N = nwg.x * 128u;
  let r0 = wid.y * 128u + (sid / 2u) * 64u;
  let c0 = wid.x * 128u + (sid % 2u) * 64u;
  ${acc.map(([i, j]) => `var c${i}${j} = R();`).join('\n  ')}
  for (var k = 0u; k < K; k += 16u) {
    ${[0, 1, 2, 3].map((i) => `let a${i} = subgroupMatrixLoad<L, row_major>(&x, (r0 + ${i * 16}u) * K + k, K);`).join('\n    ')}
    ${[0, 1, 2, 3].map((j) => `let b${j} = subgroupMatrixLoad<Rt, col_major>(&w, (c0 + ${j * 16}u) * K + k, K);`).join('\n    ')}
    ${acc.map(([i, j]) => `c${i}${j} = subgroupMatrixMultiplyAccumulate(a${i}, b${j}, c${i}${j});`).join('\n    ')}
  }
  ${acc.map(([i, j]) => `subgroupMatrixStore<row_major>(&y, (r0 + ${i * 16}u) * N + c0 + ${j * 16}u, c${i}${j}, N);`).join('\n  ')}
}`;
}

async function timeDirect(M, N, K) {
  const pipeline = await pipelineOf(directShader(K), 'direct');
  if (!pipeline) return;
  const buf = (bytes) => device.createBuffer({ size: bytes, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
  const [x, w, y] = [buf(M * K * 2), buf(N * K * 2), buf(M * N * 4)];
  const bg = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: [x, w, y].map((buffer, binding) => ({ binding, resource: { buffer } })) });
  const s = await secondsPerDispatch(pipeline, bg, [N / 128, M / 128], 10);
  console.log(`direct ${M}x${N}x${K}: ${((2 * M * N * K) / s / 1e12).toFixed(1)} TFLOP/s`);
  for (const b of [x, w, y]) b.destroy();
}

/** shaders/matmul_tc_tiled.wgsl for x [M, K] · W [N, K]ᵀ f16 with tile t ({wgm, wgn, kt}: subgroups of 4 x 4 fragments), whole and with a
 * part cut out; x f32 scaled in the fill, or (x16) already f16 as tiledCastsA makes it. */
async function timeParts(M, N, K, t, x16 = false, only = null, edits = null) {
  const { readFileSync } = await import('node:fs');
  // the shader's only #if blocks pick the fragment loads' majorness: a [M, K] and b [N, K] take the #if TRANS_B one
  const raw = readFileSync(new URL('../shaders/matmul_tc_tiled.wgsl', import.meta.url), 'utf8');
  const source = raw.replace(/#if TRANS_A\n[^#]*#else\n([^#]*)#endif\n/, '$1').replace(/#if TRANS_B\n([^#]*)#else\n[^#]*#endif\n/, '$1');
  const consts = { SM: 16, SN: 16, SK: 16, WGM: t.wgm, WGN: t.wgn, SG: 32, KT: t.kt, STAGES: 1, TRANS_A: false, TRANS_B: true, VA: 4, VB: 4, FILL_SCALE_A: !x16, FILL_SCALE_B: false };
  const header = `enable f16;\nenable subgroups;\nenable chromium_experimental_subgroup_matrix;\nalias TA = ${x16 ? 'f16' : 'f32'};\nalias TB = f16;\nalias AV = vec4<${x16 ? 'f16' : 'f32'}>;\nalias BV = vec4<f16>;\n` +
    Object.entries(consts).map(([k, v]) => `const ${k} = ${v};\n`).join('');
  const noFill = (src) => src.replace(/if \(NAMED\) \{ stage\(lid, s\); \}/, 'if (NAMED) { }').replace(/if \(NAMED && k0 \+ KT < p\.K\) \{ fetch\(row0, col0, k0 \+ KT, lid\); \}/, '');
  const noBarriers = (src) => src.replace(/\n      workgroupBarrier\(\);  \/\/ the previous[^\n]*/, '').replace(/(fill\(row0, col0, k0, lid, 0u\);)\n      workgroupBarrier\(\);/, '$1');
  const variants = edits ? Object.fromEntries(Object.entries(edits).map(([k, f]) => [k, f(source)])) : {
    whole: source,
    'no fill': noFill(source),
    'no products': source.replace(/c\d\d = subgroupMatrixMultiplyAccumulate\([^;]*;/g, ''),
    'no barriers in the K loop': noBarriers(source),
    'products only': noBarriers(noFill(source)),
  };
  const buf = (bytes) => device.createBuffer({ size: bytes, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.UNIFORM });
  const [a, w, y, one, params] = [buf(M * K * (x16 ? 2 : 4)), buf(N * K * 2), buf(M * N * 4), buf(4), buf(32)];
  device.queue.writeBuffer(one, 0, new Float32Array([1]));
  const pv = new DataView(new ArrayBuffer(32));
  [M, N, K, 0].forEach((v, i) => pv.setUint32(4 * i, v, true));
  pv.setFloat32(16, 1, true);
  device.queue.writeBuffer(params, 0, pv.buffer);
  const [bm, bn] = [t.wgm * 64, t.wgn * 64];
  const what = `${bm}x${bn}k${t.kt} ${t.wgm}x${t.wgn} subgroups, x ${x16 ? 'f16' : 'f32'}`;
  for (const [name, body] of Object.entries(variants)) {
    if (name !== 'whole' && !name.startsWith('as is') && body === source) { console.log(`parts: ${name}: pattern not found`); continue; }
    const pipeline = await pipelineOf(header + body, `parts: ${name}`);
    if (!pipeline) continue;
    const layout = pipeline.getBindGroupLayout(0);
    const entries = [params, a, w, y, one, one].map((buffer, binding) => ({ binding, resource: binding === 0 ? { buffer, size: 32 } : { buffer } }));
    const bg = device.createBindGroup({ layout, entries });
    if (only) { await only(pipeline, bg, [N / bn, M / bm]); break; }
    const { gpu: s, wall } = await timesPerDispatch(pipeline, bg, [N / bn, M / bm], 20);
    console.log(`parts ${M}x${N}x${K} ${what} ${name.padEnd(26)} ${(s * 1e6).toFixed(0).padStart(6)} us  (${((2 * M * N * K) / s / 1e12).toFixed(1)} TFLOP/s equivalent; wall clock ${(wall * 1e6).toFixed(0)} us)`);
  }
  for (const b of [a, w, y, one, params]) b.destroy();
}

// How fast the clock comes back: idle for 3 s, then the default tile's pass of 8192x3072x1024 back to back for 2 s,
// each pass's GPU time printed with the milliseconds since the load began.
if (what === 'ramp') {
  await timeParts(8192, 3072, 1024, { wgm: 2, wgn: 2, kt: 16 }, false, async (pipeline, bg, grid) => {
    await new Promise((r) => setTimeout(r, 3000));
    const t0 = performance.now();
    const seen = [];
    while (performance.now() - t0 < 2000) {
      const { gpu } = await timesPerDispatchRaw(pipeline, bg, grid, 4);
      seen.push(`${(performance.now() - t0).toFixed(0)}:${(gpu * 1e6).toFixed(0)}`);
    }
    console.log(`ramp (ms since the load began : us a pass) ${seen.join(' ')}`);
  });
  process.exit(0);
}

// The default tile whole, with its layout or workgroup memory changed: the staged rows' padding, and workgroup memory
// that is declared (and kept, by a store no invocation makes) but not used, which leaves fewer workgroups resident.
if (what === 'layout') {
  const pad = (n) => (src) => src.replace('const PAD = 8u;', `const PAD = ${n}u;`).replace(/const PAD_K = [^;]*;/, `const PAD_K = ${n}u;`);
  const extra = (floats) => (src) => src.replace('var<workgroup> tileC', `var<workgroup> unused: array<f32, ${floats}>;\nvar<workgroup> tileC`)
    .replace('  let mine = sid * FRAG;', `  if (p.M == 0xffffffffu) { unused[lid] = 1.0; }\n  let mine = sid * FRAG;`);
  // results stored straight to out (right only for whole tiles, alpha 1, no scales: timing only), tileC unused
  const direct = (src) => {
    const at = src.indexOf('  let mine = sid * FRAG;');
    const stores = [];
    for (let i = 0; i < 4; i++) for (let j = 0; j < 4; j++) {
      stores.push(`  subgroupMatrixStore<row_major>(&out, (row0 + r0 + ${i}u * SM) * p.N + col0 + c0 + ${j}u * SN, c${i}${j}, p.N);`);
    }
    return src.slice(0, at) + stores.join('\n') + '\n}\n';
  };
  const edits = { 'as is': (x) => x, 'results straight to out': direct, 'PAD 0': pad(0), 'PAD 8': pad(8), 'PAD 16': pad(16), '+8 KiB unused': extra(2048), '+16 KiB unused': extra(4096), 'as is again': (x) => x };
  for (const x16 of [false, true]) await timeParts(8192, 3072, 1024, { wgm: 2, wgn: 2, kt: 16 }, x16, null, edits);
  await timeParts(8192, 3072, 1024, { wgm: 2, wgn: 2, kt: 32 }, true, null, edits);
  process.exit(0);
}

if (what === 'parts') {
  const tiles = [
    { wgm: 2, wgn: 2, kt: 16 }, // the default, 128x128k16
    { wgm: 2, wgn: 2, kt: 32 },
    { wgm: 2, wgn: 4, kt: 16 },
    { wgm: 2, wgn: 2, kt: 16 }, // the first again: drift over the run
  ];
  for (const t of tiles) await timeParts(8192, 3072, 1024, t);
  await timeParts(8192, 3072, 1024, tiles[0], true);
  process.exit(0);
}

/** shaders/matmul_tc_direct.wgsl for x f16 [M, K] (M a multiple of 64) · W f16 [N, K]ᵀ with ks subgroups, version 2
 * when staged, whole and with the parts `edits` cut out; its #if blocks resolved for STAGED here. */
async function timeDirectRows(M, N, K, ks, staged, edits) {
  const { readFileSync } = await import('node:fs');
  const raw = readFileSync(new URL('../shaders/matmul_tc_direct.wgsl', import.meta.url), 'utf8');
  let keep = true;
  const stack = [];
  const lines = [];
  for (const line of raw.split('\n')) {
    const m = /^\s*#(if|else|endif)\s*(!?)\s*(\w*)/.exec(line);
    if (!m) { if (keep) lines.push(line); continue; }
    if (m[1] === 'if') { stack.push(keep); keep = keep && (m[3] === 'STAGED' ? staged : true) !== (m[2] === '!'); }
    else if (m[1] === 'else') keep = stack.at(-1) && !keep;
    else keep = stack.pop();
  }
  const source = lines.join('\n');
  const consts = { SM: 16, SN: 16, SK: 16, SG: 32, KS: ks, STAGED: staged };
  const header = 'enable f16;\nenable subgroups;\nenable chromium_experimental_subgroup_matrix;\n' + Object.entries(consts).map(([k, v]) => `const ${k} = ${v};\n`).join('');
  const buf = (bytes) => device.createBuffer({ size: bytes, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.UNIFORM });
  const [params, x, w, y, scale] = [buf(32), buf(M * K * 2), buf(N * K * 2), buf(M * N * 4), buf(M * 4)];
  device.queue.writeBuffer(scale, 0, new Float32Array(M).fill(1));
  device.queue.writeBuffer(params, 0, new Uint32Array([M, N, K, 0, 0x3f800000, K / ks, 0, 0]));
  for (const [name, edit] of Object.entries(edits)) {
    const body = edit(source);
    if (name !== 'whole' && body === source) { console.log(`rows: ${name}: pattern not found`); continue; }
    const pipeline = await pipelineOf(header + body, `rows: ${name}`);
    if (!pipeline) continue;
    const entries = [params, x, w, y, scale].map((buffer, binding) => ({ binding, resource: binding === 0 ? { buffer, size: 32 } : { buffer } }));
    const bg = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries });
    const { gpu: sec } = await timesPerDispatch(pipeline, bg, [N / 64, M / 64], 50);
    console.log(`rows ${M}x${N}x${K} version ${staged ? 2 : 1}, ${ks} subgroups, ${name.padEnd(22)} ${(sec * 1e6).toFixed(1).padStart(7)} us  (${((2 * M * N * K) / sec / 1e12).toFixed(1)} TFLOP/s)`);
  }
  for (const b of [params, x, w, y, scale]) b.destroy();
}

if (what === 'rows') {
  const products = (src) => src.replace(/c\d\d = subgroupMatrixMultiplyAccumulate\([^;]*;/g, '');
  const stores = (src) => src.replace(/stage[XW]\(stagedAt\(\du, lid\), [xw]\d\);/g, '');
  const barriers = (src) => src.replace('workgroupBarrier();  // every subgroup has loaded', '// every subgroup has loaded').replace(/(stageW\(stagedAt\(3u, lid\), w3\);)\n    workgroupBarrier\(\);/, '$1');
  for (const [N, K] of [[3072, 1024], [1024, 3072], [2048, 1024]]) {
    await timeDirectRows(256, N, K, 4, false, { whole: (x) => x, 'no products': products });
    await timeDirectRows(256, N, K, 4, true, { whole: (x) => x, 'no products': products, 'no staging stores': stores, 'no K-loop barriers': barriers });
  }
  process.exit(0);
}

if (what === 'direct') {
  await timeDirect(4096, 4096, 4096);
  await timeDirect(8192, 3072, 1024);
  await timeDirect(8192, 1024, 3072);
  process.exit(0);
}

for (const resT of ['f32', 'f16']) {
  for (const acc of [1, 4, 8, 16]) {
    for (const named of [true, false]) {
      for (const reload of [false, true]) {
        const tf = await time(shader({ acc, named, resT, reload }), acc);
        console.log(`acc ${resT} x${String(acc).padEnd(2)} ${named ? 'named' : 'array'} ${reload ? 'reload from workgroup memory' : 'registers only            '}  ${tf.toFixed(1)} TFLOP/s`);
      }
    }
  }
}
