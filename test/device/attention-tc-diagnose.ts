// Device diagnostic for attention version 3 (tensor cores), not a CI test (the name does not end in .test.ts): on a
// GPU with subgroup matrices it runs the forward and backward on one packed batch, with outputs pre-filled by a
// sentinel, and prints per output how many elements are NaN / unwritten / wrong against the CPU rounding
// references: the kernels as attentionPrefill / attentionBackward run them, raw pipelines with 1 and 4 subgroups,
// variants by text substitution that isolate one suspect each (row stride LD = 128 instead of 136, q staged in an
// array of its own), and the same shaders with their subgroup matrices emulated in plain WGSL. It found the 8-byte
// shift a vec2u workgroup variable caused; with the key ranges as vec4u every output is right on the H100
// (2026-12-06: bench/RESULTS.md).
//   here:    node scripts/device-tests.mjs .device/diag test/device/attention-tc-diagnose.ts
//   device:  source .device/gl/env.sh && node .device/diag/test__device__attention-tc-diagnose.ts.test.js
//            (carry .device/gl, .device/node, .device/diag; the console output is the result)
import { it } from 'vitest';
import { variantHeader } from '../../src/gpu/gpu.ts';
import { SHADERS } from '../../src/generated/shaders.ts';
import { attentionPrefill, attentionBackward, prefillRows } from '../../src/kernels/attention.ts';
import { starts, uploadQkv } from '../helpers/attention.ts';
import { testGpu } from '../helpers/gpu.ts';
import { randn, relError } from '../helpers/random.ts';
import { compileChecked, dispatchEntry, emulatedAttentionTc, storageBuffer, uniformBuffer } from '../helpers/wgsl-run.ts';
import { attentionRef, attentionTcRef, attentionBackwardTcRef } from '../ref/attention.ts';

function describeDiff(name: string, got: ArrayLike<number>, ref: ArrayLike<number>, rowLen: number) {
  let nan = 0, bad = 0, sentinel = 0;
  const badRows = new Set<number>();
  for (let i = 0; i < got.length; i++) {
    const g = got[i]!, r = ref[i]!;
    if (g === 12345) sentinel++;
    if (Number.isNaN(g)) nan++;
    if (!(Math.abs(g - r) <= 1e-2 * Math.max(1, Math.abs(r)))) { bad++; badRows.add(Math.floor(i / rowLen)); }
  }
  const rows = [...badRows].slice(0, 40);
  console.log(`${name}: n ${got.length} nan ${nan} sentinel ${sentinel} bad ${bad} badRows ${badRows.size} first [${rows}] relErr ${relError(got, ref)}`);
  const i0 = rows.length ? rows[0]! * rowLen : 0;
  console.log(`  got ${Array.from(got).slice(i0, i0 + 8).map((x) => x.toPrecision(4))} ref ${Array.from(ref).slice(i0, i0 + 8).map((x) => x.toPrecision(4))}`);
}

it('diagnose attention version 3', async () => {
  const gpu = await testGpu();
  console.log('report', JSON.stringify({ sg: gpu.report.subgroups, cfg: gpu.report.subgroupMatrixConfigs, wg: gpu.limits.maxComputeWorkgroupStorageSize, inv: gpu.limits.maxComputeInvocationsPerWorkgroup }));
  const dims = { nHeads: 4, nKv: 2, headDim: 128 };
  const lens = [1, 7, 33, 130];
  const st = starts(lens);
  const T = st[st.length - 1]!;
  const { q, k, v, tq, tk, tv } = uploadQkv(gpu, T, dims, 5 + T);
  const seq = gpu.upload(st, [st.length], 'u32', 'seqStarts');
  const rounded = attentionTcRef(q, k, v, st, dims);
  const exact = attentionRef(q, k, v, st, dims);
  const o = gpu.upload(new Float32Array(q.length).fill(12345), [T, 4, 128], 'f32', 'o');
  const lse = gpu.upload(new Float32Array(T * 4).fill(12345), [T, 4], 'f32', 'lse');
  try {
    gpu.device.pushErrorScope('validation');
    attentionPrefill(gpu, tq, tk, tv, seq, lens.length, dims, { o, lse }, 'tc');
    await gpu.sync();
    console.log('validation error:', (await gpu.device.popErrorScope())?.message ?? 'none');
    describeDiff('tc o', await gpu.readF32(o), rounded.o, 128);
    describeDiff('tc lse', await gpu.readF32(lse), rounded.lse, 4);
  } catch (e) {
    console.log('tc prefill threw', String(e).slice(0, 500));
  }

  const rawPrefill = (nsg: number) => variantHeader({ enables: ['f16', 'subgroups', 'chromium_experimental_subgroup_matrix'], consts: { SM: 16, SN: 16, SK: 16, SG: gpu.report.subgroups?.maxSize ?? 32, HD: 128, NSG: nsg } }) + SHADERS.attention_prefill_tc!;
  // q staged in an array of its own that no key tile overwrites
  const qApart = (code: string) => {
    const out = code
      .replace('var<workgroup> keyRange: vec4u;', 'var<workgroup> keyRange: vec4u;\nvar<workgroup> qs: array<f16, ROWS * LD>;')
      .replace('stage4((i / NS) * LD + 4u * (i % NS), x);', 'let at = (i / NS) * LD + 4u * (i % NS); qs[at] = f16(x.x); qs[at + 1u] = f16(x.y); qs[at + 2u] = f16(x.z); qs[at + 3u] = f16(x.w);')
      .replaceAll('(&kv, qb +', '(&qs, qb +');
    if (!out.includes('(&qs, qb +') || !out.includes('qs[at]')) throw new Error('qApart: a substitution missed');
    return out;
  };
  // The same shader with NSG 1 and 2, raw, and the emulated one, on this GPU.
  const params = new Uint32Array([T, 4, 2, 2, lens.length, 0, 0, 0]);
  new Float32Array(params.buffer)[5] = (1 / Math.sqrt(128)) * Math.LOG2E;
  for (const [label, code, nsg] of [
    ['raw nsg1', variantHeader({ enables: ['f16', 'subgroups', 'chromium_experimental_subgroup_matrix'], consts: { SM: 16, SN: 16, SK: 16, SG: gpu.report.subgroups?.maxSize ?? 32, HD: 128, NSG: 1 } }) + SHADERS.attention_prefill_tc!, 1],
    ['raw nsg4', variantHeader({ enables: ['f16', 'subgroups', 'chromium_experimental_subgroup_matrix'], consts: { SM: 16, SN: 16, SK: 16, SG: gpu.report.subgroups?.maxSize ?? 32, HD: 128, NSG: 4 } }) + SHADERS.attention_prefill_tc!, 4],
    ['raw nsg4 Acc(0.0)', (variantHeader({ enables: ['f16', 'subgroups', 'chromium_experimental_subgroup_matrix'], consts: { SM: 16, SN: 16, SK: 16, SG: gpu.report.subgroups?.maxSize ?? 32, HD: 128, NSG: 4 } }) + SHADERS.attention_prefill_tc!).replaceAll('Acc()', 'Acc(0.0)'), 4],
    ['raw nsg1 LD=128', rawPrefill(1).replace('const LD = HD + 8u;', 'const LD = HD;').replace('const LDP = KT + 8u;', 'const LDP = KT;'), 1],
    ['raw nsg1 q apart', qApart(rawPrefill(1)), 1],
    ['raw nsg1 q apart LD=128', qApart(rawPrefill(1)).replace('const LD = HD + 8u;', 'const LD = HD;').replace('const LDP = KT + 8u;', 'const LDP = KT;'), 1],
  ] as const) {
    try {
      const module = await compileChecked(gpu, code);
      const ob = storageBuffer(gpu, new Float32Array(q.length).fill(12345), GPUBufferUsage.COPY_SRC);
      const lb = storageBuffer(gpu, new Float32Array(T * 4).fill(12345), GPUBufferUsage.COPY_SRC);
      const buffers = [uniformBuffer(gpu, params), storageBuffer(gpu, q), storageBuffer(gpu, k), storageBuffer(gpu, v), storageBuffer(gpu, Uint32Array.from(st)), ob, lb];
      gpu.device.pushErrorScope('validation');
      await dispatchEntry(gpu, module, 'main', { ...buffers }, [Math.ceil((T * 2) / (16 * nsg)), 2]);
      console.log(label, 'validation error:', (await gpu.device.popErrorScope())?.message ?? 'none');
      describeDiff(`${label} o`, new Float32Array(await gpu.readBytes(ob, 0, q.length * 4, 'o')), rounded.o, 128);
      describeDiff(`${label} lse`, new Float32Array(await gpu.readBytes(lb, 0, T * 16, 'lse')), rounded.lse, 4);
    } catch (e) {
      console.log(label, 'threw', String(e).slice(0, 1500));
    }
  }

  // backward version 3 next to the emulated backward on this GPU
  const dO = randn(q.length, 78, 1);
  const f = attentionPrefill(gpu, tq, tk, tv, seq, lens.length, dims, {}, prefillRows(gpu, 128));
  const [of, lf] = [await gpu.readF32(f.o), await gpu.readF32(f.lse)];
  const bref = attentionBackwardTcRef(q, k, v, of, lf, dO, st, dims);
  try {
    const g = attentionBackward(gpu, tq, tk, tv, f.o, f.lse, gpu.upload(dO, [T, 4, 128], 'f32', 'dO'), seq, lens.length, dims, 3);
    describeDiff('tc dq', await gpu.readF32(g.dq), bref.dq, 128);
    describeDiff('tc dk', await gpu.readF32(g.dk), bref.dk, 128);
    describeDiff('tc dv', await gpu.readF32(g.dv), bref.dv, 128);
  } catch (e) {
    console.log('backward threw', String(e).slice(0, 1500));
  }
  const rawBackward = (nsg: number) => variantHeader({ enables: ['f16', 'subgroups', 'chromium_experimental_subgroup_matrix'], consts: { SM: 16, SN: 16, SK: 16, SG: gpu.report.subgroups?.maxSize ?? 32, HD: 128, NSG: nsg } }) + SHADERS.attention_backward_tc!;
  const ld128 = (c: string) => c.replace('const LD = HD + 8u;', 'const LD = HD;').replace('const LDS = KT + 8u;', 'const LDS = KT;');
  for (const [label, codeOf] of [['raw', rawBackward], ['raw LD=128', (n: number) => ld128(rawBackward(n))]] as const) try {
    const one = await compileChecked(gpu, codeOf(1));
    const two = await compileChecked(gpu, codeOf(2));
    const bp = new Uint32Array([T, 4, 2, 2, lens.length, 0, 0, 0]);
    new Float32Array(bp.buffer).set([(1 / Math.sqrt(128)) * Math.LOG2E, 1 / Math.sqrt(128)], 5);
    const nan = (n: number) => storageBuffer(gpu, new Float32Array(n).fill(12345), GPUBufferUsage.COPY_SRC);
    const b = { p: uniformBuffer(gpu, bp), q: storageBuffer(gpu, q), k: storageBuffer(gpu, k), v: storageBuffer(gpu, v), dO: storageBuffer(gpu, dO), stats: storageBuffer(gpu, new Float32Array(T * 16)), st: storageBuffer(gpu, Uint32Array.from(st)), dk: nan(k.length), dv: nan(v.length), dq: nan(q.length), o: storageBuffer(gpu, of), lse: storageBuffer(gpu, lf), seqMax: storageBuffer(gpu, new Uint32Array(lens.length)) };
    const perRow = Math.ceil((T * 4) / 64);
    await dispatchEntry(gpu, one, 'delta', { 0: b.p, 4: b.dO, 5: b.stats, 6: b.st, 10: b.o, 11: b.lse, 12: b.seqMax }, [perRow]);
    await dispatchEntry(gpu, one, 'scales', { 0: b.p, 5: b.stats, 12: b.seqMax }, [perRow]);
    const kvb = { 0: b.p, 1: b.q, 2: b.k, 3: b.v, 4: b.dO, 5: b.stats };
    await dispatchEntry(gpu, one, 'dkdv', { ...kvb, 6: b.st, 7: b.dk, 8: b.dv }, [Math.ceil(T / 16), 2]);
    await dispatchEntry(gpu, two, 'dq_rows', { ...kvb, 9: b.dq }, [Math.ceil((T * 2) / 32), 2]);
    const rd = async (x: GPUBuffer, n: number) => new Float32Array(await gpu.readBytes(x, 0, n * 4, 'emu'));
    describeDiff(`${label} dq`, await rd(b.dq, q.length), bref.dq, 128);
    describeDiff(`${label} dk`, await rd(b.dk, k.length), bref.dk, 128);
    describeDiff(`${label} dv`, await rd(b.dv, v.length), bref.dv, 128);
  } catch (e) {
    console.log(label, 'backward threw', String(e).slice(0, 1500));
  }
  console.log('exact vs rounded o', relError(rounded.o, exact.o));
});
