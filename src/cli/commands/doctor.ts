// `troupe doctor`: which WebGPU runtime and adapter troupe gets, its features and key limits, and a
// small random kernel checked against a CPU reference. Exit code 1 when no adapter or the check fails.
import { Gpu, type AdapterReport } from '../../gpu/gpu.ts';
import { roundF16 } from '../../gpu/dtype.ts';
import { matmul, matmulWith } from '../../kernels/matmul.ts';
import { tensorCoreDirectPlan, tensorCorePlan } from '../../kernels/matmul-tc.ts';
import { detectRuntime } from '../../gpu/runtime.ts';
import { mulberry32 } from '../../util/mulberry32.ts';
import { disabledFeatures, parse } from '../args.ts';
import type { Command } from '../command.ts';

/** Limits printed by doctor: the ones kernels and model sizes run into. */
const KEY_LIMITS = [
  'maxBufferSize',
  'maxStorageBufferBindingSize',
  'maxComputeWorkgroupStorageSize',
  'maxComputeInvocationsPerWorkgroup',
  'maxComputeWorkgroupsPerDimension',
  'maxStorageBuffersPerShaderStage',
] as const;

export interface KernelCheck {
  kernel: string;
  dtype: 'f32' | 'f16';
  shape: string;
  maxRelError: number;
  tolerance: number;
  ok: boolean;
}

export interface DoctorResult {
  runtime: string;
  runtimeVersion: string;
  adapter: AdapterReport | null;
  error?: string;
  checks: KernelCheck[];
  ok: boolean;
}

function runtimeVersion(): string {
  const deno = (globalThis as { Deno?: { version: { deno: string } } }).Deno;
  if (deno) return `deno ${deno.version.deno} (wgpu)`;
  return `node ${process.versions.node} (Dawn, npm webgpu)`;
}

/** Seeded uniform values in [-1, 1], none near zero (mulberry32). */
function randomValues(n: number, seed: number): Float32Array {
  const next = mulberry32(seed);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const u = next();
    out[i] = (u < 0.5 ? -1 : 1) * (0.05 + 0.95 * Math.abs(2 * u - 1));
  }
  return out;
}

function maxRelError(got: Float32Array, want: Float32Array, floor = 1e-6): number {
  let diff = 0;
  let scale = floor;
  for (let i = 0; i < want.length; i++) {
    const d = Math.abs(got[i]! - want[i]!);
    diff = Number.isNaN(d) ? Infinity : Math.max(diff, d);
    scale = Math.max(scale, Math.abs(want[i]!));
  }
  return diff / scale;
}

/** 2^(15 - e) for m = f·2^e, f in [0.5, 1) (shaders/absmax_scale.wgsl); 1 for 0 or non-finite m. */
function absmaxScale(m: number): number {
  if (m === 0 || !Number.isFinite(m)) return 1;
  let e = Math.floor(Math.log2(m)) + 1;
  if (m >= 2 ** e) e++;
  if (m < 2 ** (e - 1)) e--;
  return 2 ** Math.min(126, Math.max(-126, 15 - e));
}

/** The f16 copy the tensor-core kernel multiplies of an f32 operand seen as R rows of L (strided: stored [L, R]). */
function tensorCoreCopy(x: Float32Array, R: number, L: number, strided: boolean): Float32Array {
  const at = (i: number, l: number) => (strided ? l * R + i : i * L + l);
  const out = new Float32Array(x.length);
  for (let i = 0; i < R; i++) {
    let m = 0;
    for (let l = 0; l < L; l++) m = Math.max(m, Math.abs(x[at(i, l)]!));
    const s = absmaxScale(m);
    const row = new Float32Array(L).map((_, l) => x[at(i, l)]! * s);
    roundF16(row).forEach((v, l) => (out[at(i, l)] = v / s));
  }
  return out;
}

/** alpha·op(a)·op(b) + init in doubles. */
function matmulRef(a: Float32Array, b: Float32Array, M: number, N: number, K: number, transA: boolean, transB: boolean, alpha: number, init: Float32Array | null): Float32Array {
  const out = new Float32Array(M * N);
  for (let i = 0; i < M; i++) {
    for (let j = 0; j < N; j++) {
      let acc = 0;
      for (let k = 0; k < K; k++) acc += a[transA ? k * M + i : i * K + k]! * b[transB ? j * K + k : k * N + j]!;
      out[i * N + j] = alpha * acc + (init ? init[i * N + j]! : 0);
    }
  }
  return out;
}

/**
 * Tensor cores (subgroup matrices), where the adapter has them: each layout, f32 and f16 operands, partial
 * tiles, alpha with accumulation and gradient-sized values, against a CPU product of the f16 copies the kernel
 * makes (so only f32 accumulation order may differ).
 */
/** 4x the worst error measured on the H200 (4.7e-7, 2026-12-02): only f32 accumulation order differs. */
const TC_TOLERANCE = 2e-6;

async function checkTensorCores(gpu: Gpu): Promise<KernelCheck[]> {
  const cases = [
    { M: 256, N: 128, K: 96, transA: false, transB: true, da: 'f16', scale: 1 },
    { M: 130, N: 257, K: 129, transA: false, transB: true, da: 'f32', scale: 1 },
    { M: 257, N: 130, K: 70, transA: false, transB: false, da: 'f32', scale: 1e-9 },
    { M: 100, N: 200, K: 300, transA: true, transB: false, da: 'f32', scale: 3e4 },
    { M: 64, N: 96, K: 50, transA: true, transB: true, da: 'f16', scale: 1 },
  ] as const;
  const checks: KernelCheck[] = [];
  for (const [n, c] of cases.entries()) {
    if (typeof tensorCorePlan(gpu, c) === 'string') continue;
    const { M, N, K, transA, transB } = c;
    const a = randomValues(M * K, 13 + n).map((v) => v * c.scale);
    const b = roundF16(randomValues(N * K, 14 + n));
    const a16 = c.da === 'f16' ? roundF16(a) : tensorCoreCopy(a, M, K, transA);
    const ta = gpu.upload(c.da === 'f16' ? a16 : a, transA ? [K, M] : [M, K], c.da, 'doctor.a');
    const tb = gpu.upload(b, transB ? [N, K] : [K, N], 'f16', 'doctor.b');
    const init = randomValues(M * N, 15 + n).map((v) => v * c.scale);
    const out = gpu.upload(init, [M, N], 'f32', 'doctor.out');
    matmulWith(gpu, 'tc', ta, tb, { transA, transB, alpha: -0.5, accumulate: true, out, label: 'doctor.matmul_tc' });
    const want = matmulRef(a16, b, M, N, K, transA, transB, -0.5, init);
    const err = maxRelError(await gpu.readF32(out), want, want.reduce((m, v) => Math.max(m, Math.abs(v)), 0)); // no floor: |a| may be 1e-9
    const layout = `${transA ? 'aᵀ' : 'a'}·${transB ? 'bᵀ' : 'b'}`;
    checks.push({ kernel: `matmul ${layout}, tensor cores${c.scale !== 1 ? ` |a|~${c.scale}` : ''}`, dtype: c.da, shape: `${M}x${N}x${K}`, maxRelError: err, tolerance: TC_TOLERANCE, ok: err <= TC_TOLERANCE });
    for (const t of [ta, tb, out]) t.release();
  }
  // The batches-of-rows kernel (matmul_tc_direct, what rollouts and decode batches run), both versions: x f32 with
  // padding rows (130 of 192), W f16, K split over subgroups.
  const [M, N, K] = [130, 128, 512];
  for (const staged of [false, true]) {
    const plan = tensorCoreDirectPlan(gpu, { M, N, K, transA: false, transB: true }, 'f32', 'f16', undefined, staged);
    if (typeof plan === 'string') continue;
    const a = randomValues(M * K, 21);
    const b = roundF16(randomValues(N * K, 22));
    const ta = gpu.upload(a, [M, K], 'f32', 'doctor.x');
    const tb = gpu.upload(b, [N, K], 'f16', 'doctor.w');
    const init = randomValues(M * N, 23);
    const out = gpu.upload(init, [M, N], 'f32', 'doctor.out');
    matmulWith(gpu, 'tc_direct', ta, tb, { transB: true, tcStaged: staged, alpha: -0.5, accumulate: true, out, label: 'doctor.matmul_tc_direct' });
    const want = matmulRef(tensorCoreCopy(a, M, K, false), b, M, N, K, false, true, -0.5, init);
    const err = maxRelError(await gpu.readF32(out), want, want.reduce((m, v) => Math.max(m, Math.abs(v)), 0));
    const kernel = `matmul x·Wᵀ, direct tensor cores${staged ? ', staged' : ''} (${plan.ks} subgroups over K)`;
    checks.push({ kernel, dtype: 'f32', shape: `${M}x${N}x${K}`, maxRelError: err, tolerance: TC_TOLERANCE, ok: err <= TC_TOLERANCE });
    for (const t of [ta, tb, out]) t.release();
  }
  return checks;
}

/** x·Wᵀ (the model's linear layer) on random odd-sized inputs against the CPU: f32, and f16 storage when present. */
async function checkKernels(gpu: Gpu): Promise<KernelCheck[]> {
  const [M, N, K] = [37, 29, 53];
  const checks: KernelCheck[] = [];
  for (const dtype of gpu.f16 ? (['f32', 'f16'] as const) : (['f32'] as const)) {
    const round = dtype === 'f16' ? roundF16 : (x: Float32Array) => x;
    const a = round(randomValues(M * K, 11));
    const b = round(randomValues(N * K, 12));
    const ta = gpu.upload(a, [M, K], dtype, 'doctor.x');
    const tb = gpu.upload(b, [N, K], dtype, 'doctor.w');
    const out = matmul(gpu, ta, tb, { transB: true, label: 'doctor.matmul' });
    const got = await gpu.readF32(out);
    const err = maxRelError(got, matmulRef(a, b, M, N, K, false, true, 1, null));
    const tolerance = dtype === 'f16' ? 1e-4 : 1e-5;
    checks.push({ kernel: 'matmul x·Wᵀ', dtype, shape: `${M}x${K} · (${N}x${K})ᵀ`, maxRelError: err, tolerance, ok: err <= tolerance });
    for (const t of [ta, tb, out]) t.release();
  }
  checks.push(...(await checkTensorCores(gpu)));
  return checks;
}

export async function runDoctor(disable: string[] = []): Promise<DoctorResult> {
  const result: DoctorResult = { runtime: detectRuntime(), runtimeVersion: runtimeVersion(), adapter: null, checks: [], ok: false };
  let gpu: Gpu;
  try {
    gpu = await Gpu.create({ disable });
  } catch (e) {
    result.error = `${(e as Error).name}: ${(e as Error).message}`;
    return result;
  }
  result.adapter = gpu.report;
  try {
    result.checks = await checkKernels(gpu);
    result.ok = result.checks.every((c) => c.ok);
  } catch (e) {
    result.error = `${(e as Error).name}: ${(e as Error).message}`;
  } finally {
    gpu.destroy();
  }
  return result;
}

function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${Number.isInteger(v) ? v : v.toFixed(1)} ${units[i]}`;
}

export function formatDoctor(r: DoctorResult): string {
  const lines = [`runtime      ${r.runtimeVersion}`];
  const a = r.adapter;
  if (a) {
    lines.push(
      `adapter      ${[a.vendor, a.architecture, a.device].filter(Boolean).join(' / ') || '(no adapter info)'}`,
      `description  ${a.description || '-'}`,
      `driver       ${a.cpuDriver ? `CPU (${a.cpuDriver}): correct but slow, for tests` : 'GPU'}`,
      `features     ${a.features.join(', ') || '-'}`,
      `unused       ${a.adapterFeatures.filter((f) => !a.features.includes(f)).join(', ') || '-'} (offered by the adapter; troupe does not enable them)`,
      `subgroups    ${a.subgroups ? `size ${a.subgroups.minSize}-${a.subgroups.maxSize}` : '-'}; subgroup matrix configs: ${a.subgroupMatrixConfigs.map((c) => `${c.componentType}->${c.resultComponentType} ${c.M}x${c.N}x${c.K}`).join(', ') || '-'}${a.subgroupMatrixRefused ? ` (unused: ${a.subgroupMatrixRefused})` : ''}`,
      'limits',
      ...KEY_LIMITS.map((k) => {
        const v = a.limits[k];
        const text = v === undefined ? '-' : /Size$/.test(k) ? `${formatBytes(v)} (${v})` : String(v);
        return `  ${k.padEnd(34)} ${text}`;
      }),
    );
  }
  for (const c of r.checks) {
    lines.push(
      `check        ${c.kernel} ${c.dtype} ${c.shape}: max rel error ${c.maxRelError.toExponential(2)} ` +
        `(tolerance ${c.tolerance.toExponential(0)}) ${c.ok ? 'ok' : 'FAILED'}`,
    );
  }
  if (r.error) lines.push(`error        ${r.error}`);
  lines.push(r.ok ? 'doctor: OK' : a ? 'doctor: FAILED (a kernel check failed)' : 'doctor: FAILED (no usable WebGPU adapter)');
  return lines.join('\n');
}

export const command: Command = {
  name: 'doctor',
  summary: 'show the WebGPU runtime, adapter, features and limits; check a kernel against the CPU',
  usage: [
    'usage: troupe doctor [--json] [--disable FEATURE]...',
    '',
    '  --json              print one JSON object instead of text',
    '  --disable FEATURE   do not enable an optional feature (e.g. shader-f16), to check the fallbacks',
    '',
    'Exit code 1 when no usable adapter exists or the kernel check fails.',
  ].join('\n'),
  async run(argv) {
    const { values } = parse('doctor', {
      args: argv,
      options: { json: { type: 'boolean' }, disable: { type: 'string', multiple: true } },
    });
    const r = await runDoctor(disabledFeatures('doctor', values.disable));
    console.log(values.json ? JSON.stringify(r) : formatDoctor(r));
    return r.ok ? 0 : 1;
  },
};
