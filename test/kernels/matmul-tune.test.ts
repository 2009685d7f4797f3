// The matmul autotuner: every candidate computes the product, the tuned table steers matmul()'s auto policy
// (rows in a tuned count's bucket only), tuning keeps the fastest measured (never slower than the heuristic's own
// choice), and tables survive a round trip through the store while corrupt or foreign ones are refused by name.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { command as tune } from '../../src/cli/commands/tune.ts';
import { matmul, matmulWith, pickMatmul, pickMatmulVariant, setMatmulPolicy } from '../../src/kernels/matmul.ts';
import { matmulCandidates, tuneMatmuls } from '../../src/kernels/matmul-tune.ts';
import { applyStoredTuning, loadTuning, parseTuning, saveTuning, serializeTuning, tuningLocation } from '../../src/kernels/matmul-tune-store.ts';
import { choiceName, type MatmulChoice, MatmulTuning, matmulTuning, setMatmulTuning, type TunedEntry, TuningError, type TuneShape } from '../../src/kernels/matmul-tuning.ts';
import { modelTuneShapes } from '../../src/model/tune-shapes.ts';
import { qwen3Preset } from '../../src/model/presets.ts';
import { runCommand } from '../helpers/cli.ts';
import { testGpu } from '../helpers/gpu.ts';
import { randn, relError } from '../helpers/random.ts';
import { matmulRef } from '../ref/matmul.ts';

const gpu = await testGpu();

const entry = (M: number, choice: MatmulChoice, s: Partial<TuneShape> = {}): TunedEntry => ({
  M, N: 64, K: 48, transA: false, transB: true, a: 'f32', b: 'f32', ...s, choice, seconds: 1e-5, auto: { variant: 'tile64v' }, autoSeconds: 2e-5,
});

describe('matmul candidates', () => {
  // vec4: whether the 4-wide tiles can read both operands (their stored-contiguous dimensions are multiples of 4)
  for (const [M, N, K, transA, transB, vec4] of [[40, 64, 48, false, true, true], [33, 70, 50, false, false, false], [20, 36, 44, true, false, true]] as const) {
    it(`each computes ${M}x${N}x${K}${transA ? ' aᵀ' : ''}${transB ? ' bᵀ' : ''} as the CPU reference does`, async () => {
      const s: TuneShape = { M, N, K, transA, transB, a: 'f32', b: 'f32' };
      const candidates = matmulCandidates(gpu, s);
      expect(candidates.map(choiceName)).toContain('tile64');
      expect(candidates.some((c) => c.variant === 'tile64v')).toBe(vec4);
      const a = randn(M * K, M + N + K);
      const b = randn(K * N, M * N + 1);
      const want = matmulRef(a, b, M, N, K, { transA, transB });
      const ta = gpu.upload(a, transA ? [K, M] : [M, K], 'f32', 'a');
      const tb = gpu.upload(b, transB ? [N, K] : [K, N], 'f32', 'b');
      for (const c of candidates) {
        const out = matmulWith(gpu, c.variant, ta, tb, { transA, transB, tcTile: c.tcTile, tcSplits: c.tcSplits, tcStaged: c.tcStaged });
        const err = relError(await gpu.readF32(out), want);
        expect({ choice: choiceName(c), ok: err < (c.variant.startsWith('tc') ? 1e-2 : 1e-5) }).toEqual({ choice: choiceName(c), ok: true });
        out.release();
      }
      ta.release();
      tb.release();
    });
  }
});

describe('MatmulTuning', () => {
  it('a tuned count covers the rows above the next smaller one, the first down to half of it', () => {
    const t = new MatmulTuning([entry(64, { variant: 'tile64' }), entry(32, { variant: 'tile128' })], 'test');
    const at = (M: number, s: Partial<TuneShape> = {}) => t.lookup({ M, N: 64, K: 48, transA: false, transB: true, ...s }, { a: s.a ?? 'f32', b: s.b ?? 'f32' })?.variant ?? null;
    expect([16, 17, 32, 33, 64, 65].map((M) => at(M))).toEqual([null, 'tile128', 'tile128', 'tile64', 'tile64', null]);
    expect(at(40, { transB: false })).toBeNull();
    expect(at(40, { b: 'f16' })).toBeNull();
    expect(at(40, { N: 65 })).toBeNull();
  });

  it('refuses a product tuned twice', () => {
    expect(() => new MatmulTuning([entry(32, { variant: 'tile64' }), entry(32, { variant: 'tile64v' })], 'twice.json')).toThrow(/twice.json: 32x64x48.* tuned twice/);
  });

  it("steers matmul's auto policy where it covers the product and its choice runs, the heuristic elsewhere", async () => {
    const shape = { M: 40, N: 64, K: 48, transA: false, transB: true };
    const types = { a: 'f32', b: 'f32' } as const;
    const heuristic = pickMatmulVariant(gpu, shape, types);
    const other = heuristic === 'tile64' ? 'tile64v' : 'tile64';
    setMatmulTuning(gpu, new MatmulTuning([entry(64, { variant: other }), entry(32, { variant: 'tile64v' }, { transA: true, transB: false, N: 64, K: 48 })], 'test'));
    try {
      expect(pickMatmulVariant(gpu, shape, types)).toBe(other);
      expect(pickMatmulVariant(gpu, { ...shape, M: 65 }, types)).toBe(heuristic);
      expect(pickMatmul(gpu, shape, types, false).variant).toBe(heuristic);
      // aᵀ with 31 rows: vec4 loads along M do not fit, so the tuned tile64v gives way to the heuristic
      expect(pickMatmulVariant(gpu, { M: 31, N: 64, K: 48, transA: true, transB: false }, types)).toBe('tile64');
      const prev = setMatmulPolicy(gpu, 'tile64v');
      expect(pickMatmulVariant(gpu, shape, types)).toBe('tile64v');
      setMatmulPolicy(gpu, prev);
      const a = randn(40 * 48, 3);
      const b = randn(64 * 48, 4);
      const out = matmul(gpu, gpu.upload(a, [40, 48], 'f32', 'a'), gpu.upload(b, [64, 48], 'f32', 'b'), { transB: true });
      expect(relError(await gpu.readF32(out), matmulRef(a, b, 40, 64, 48, { transB: true }))).toBeLessThan(1e-5);
    } finally {
      setMatmulTuning(gpu, null);
    }
    expect(pickMatmulVariant(gpu, shape, types)).toBe(heuristic);
  });
});

describe('tuneMatmuls', () => {
  it('keeps, per product, the fastest candidate measured: never slower than the heuristic choice', async () => {
    const shapes: TuneShape[] = [
      { M: 64, N: 128, K: 64, transA: false, transB: true, a: 'f32', b: 'f32' },
      { M: 33, N: 70, K: 50, transA: false, transB: false, a: 'f32', b: 'f32' },
    ];
    const seen: number[] = [];
    const t = await tuneMatmuls(gpu, shapes, { roundMs: 1, rounds: 1, onShape: (_, done) => seen.push(done) });
    expect(seen).toEqual([1, 2]);
    expect(t.entries.map((e) => [e.M, e.N, e.K])).toEqual([[64, 128, 64], [33, 70, 50]]);
    for (const [i, e] of t.entries.entries()) {
      expect(matmulCandidates(gpu, shapes[i]!).map(choiceName)).toContain(choiceName(e.choice));
      expect(e.seconds).toBeGreaterThan(0);
      expect(e.seconds).toBeLessThanOrEqual(e.autoSeconds);
      expect(choiceName(e.auto)).toBe(pickMatmulVariant(gpu, shapes[i]!, shapes[i]));
    }
    expect(t.entries[1]!.choice.variant).toBe('tile64'); // odd N and K: no other f32 tile takes it
  });
});

describe('modelTuneShapes', () => {
  it("lists x·Wᵀ and dy·W of Qwen3-0.6B's five linear shapes and lm_head, lm_head to 2048 rows", () => {
    const shapes = modelTuneShapes(qwen3Preset('Qwen3-0.6B'), 'f16', [64, 4096]);
    const names = shapes.map((s) => `${s.M}x${s.N}x${s.K}${s.transB ? 't' : 'n'}`);
    expect(names).toContain('64x2048x1024t'); // q_proj
    expect(names).toContain('4096x1024x3072n'); // dy·W of gate/up
    expect(names).toContain('64x151936x1024t');
    expect(names).toContain('64x1024x151936n');
    expect(names).not.toContain('4096x151936x1024t');
    expect(shapes.length).toBe(5 * 2 * 2 + 2);
    expect(shapes.every((s) => s.a === 'f32' && s.b === 'f16' && !s.transA)).toBe(true);
  });
});

describe('tuning store', () => {
  let dir = '';
  const saved = { cache: process.env.TROUPE_CACHE_DIR, tune: process.env.TROUPE_TUNE };
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'troupe-tune-'));
    process.env.TROUPE_CACHE_DIR = dir;
  });
  afterAll(async () => {
    for (const [k, v] of [['TROUPE_CACHE_DIR', saved.cache], ['TROUPE_TUNE', saved.tune]] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    setMatmulTuning(gpu, null);
    await rm(dir, { recursive: true, force: true });
  });
  const table = () => new MatmulTuning([entry(64, { variant: 'tile64' }), entry(128, { variant: 'tile64v' }, { N: 128 })], 'measured');

  it('round-trips a table, and refuses corrupt, foreign and unrunnable ones by name', () => {
    const text = serializeTuning(gpu, table());
    expect(parseTuning(text, 'x.json', gpu).entries).toEqual(table().entries);
    expect(() => parseTuning('{"format":', 'bad.json', gpu)).toThrow(/bad.json: not valid JSON/);
    const json = JSON.parse(text);
    expect(() => parseTuning(JSON.stringify({ ...json, key: '00000000' }), 'other.json', gpu)).toThrow(/other.json: measured on another adapter/);
    const bogus = { ...json, entries: [{ ...json.entries[0], choice: { variant: 'bogus' } }] };
    expect(() => parseTuning(JSON.stringify(bogus), 'v.json', gpu)).toThrow(TuningError);
    expect(() => parseTuning(JSON.stringify(bogus), 'v.json', gpu)).toThrow(/v.json: entry 0 choice: no known kernel variant/);
    const staged = { ...json, entries: [{ ...json.entries[0], choice: { variant: 'tc_direct', tcSplits: 4, tcStaged: 'yes' } }] };
    expect(() => parseTuning(JSON.stringify(staged), 's.json', gpu)).toThrow(/s.json: entry 0 choice: tcStaged is not true or false/);
    expect([{ variant: 'tc_direct', tcSplits: 4, tcStaged: true }, { variant: 'tc_direct', tcSplits: 2, tcStaged: false }].map((c) => choiceName(c as MatmulChoice))).toEqual(['tc_direct/4s', 'tc_direct/2']);
    const negative = { ...json, entries: [{ ...json.entries[0], M: -3 }] };
    expect(() => parseTuning(JSON.stringify(negative), 'n.json', gpu)).toThrow(/n.json: entry 0: M is not a positive integer/);
    // tile64v cannot read a 50-deep operand as vec4
    const unrunnable = { ...json, entries: [{ ...json.entries[0], K: 50, choice: { variant: 'tile64v' } }] };
    expect(() => parseTuning(JSON.stringify(unrunnable), 'u.json', gpu)).toThrow(/u.json: tile64v cannot compute 64x64x50/);
  });

  it('saves to and loads from the cache directory; TROUPE_TUNE=off leaves matmul untuned', async () => {
    expect(tuningLocation(gpu).startsWith(`${dir}/matmul-tuning-`)).toBe(true);
    expect(await loadTuning(gpu)).toBeNull();
    expect(await applyStoredTuning(gpu)).toBeNull();
    const where = await saveTuning(gpu, table());
    expect((await loadTuning(gpu))!.entries).toEqual(table().entries);
    process.env.TROUPE_TUNE = 'off';
    expect(await applyStoredTuning(gpu)).toBeNull();
    expect(matmulTuning(gpu)).toBeUndefined();
    process.env.TROUPE_TUNE = 'sometimes';
    await expect(applyStoredTuning(gpu)).rejects.toThrow(/TROUPE_TUNE=sometimes: expected on or off/);
    delete process.env.TROUPE_TUNE;
    const applied = await applyStoredTuning(gpu);
    expect(applied!.note).toContain(where);
    expect(matmulTuning(gpu)!.entries.length).toBe(2);
    setMatmulTuning(gpu, null);
    await writeFile(where, '{"format": "troupe-matmul-tuning", "version": 1, "key": ');
    await expect(loadTuning(gpu)).rejects.toThrow(new RegExp(`${where}: not valid JSON`));
  });

  // Node only: the tuner itself runs under both runtimes above; the command once is enough (a minute under lavapipe)
  it.skipIf('Deno' in globalThis)('troupe tune measures the demo model and stores what later runs load', async () => {
    const { code, last } = await runCommand(tune, ['--rows', '32', '--round-ms', '1', '--json']);
    expect(code).toBe(0);
    const e = JSON.parse(last) as TunedEntry;
    expect(e.M).toBe(32);
    const stored = await loadTuning(gpu);
    // the demo model (hidden 64, q 64, k/v 32, MLP 256): four linear shapes and lm_head, each x·Wᵀ and dy·W
    expect(stored!.entries.length).toBe(10);
  });
});
