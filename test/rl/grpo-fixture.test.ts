// troupe's GRPO gradient path (src/rl/grpo-batch.ts: JSONL batch → packed batch → policyLoss → lossAndGradients
// through AdapterSet.rows) against PyTorch + PEFT with verl's policy loss (test/fixtures/grpo, made on the H200 by
// test/fixtures/gen/make_grpo_fixtures.py): the gqa-tied model and adapter, 3 sequences with clipped, dual-clipped
// and ±20-clamped tokens and advantages of both signs, at temperature 0.7, in every aggregation mode and once with
// k3 KL to the base model + entropy bonus; a packed batch of 4 sequences through two adapters interleaved
// (a, b, a, b: different ranks, adapter2 missing modules); and `troupe grad --loss grpo` as a user runs it.
// Measured on SwiftShader (Node) against CUDA f32 (TF32 off), largest over all cases: loss 3.1e-7 relative;
// logp 2.9e-6 absolute (values −3 … −31); clip fractions equal (the same tokens clip); LoRA gradients relError
// (max |Δ| / max |g| per tensor) 5.5e-6, elementwise 0.18 of |Δ| <= 5e-4·|g| + 1e-5·max|g|. The bounds below
// are 2-4 times those.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gpu } from '../../src/gpu/gpu.ts';
import { AdapterSet, type LoraAdapter } from '../../src/model/lora.ts';
import { loadPeft } from '../../src/model/peft.ts';
import { Qwen3Model } from '../../src/model/qwen3.ts';
import { readSafetensorsBytes } from '../../src/model/safetensors.ts';
import { DirectorySource } from '../../src/model/source.ts';
import { loadQwen3 } from '../../src/model/weights.ts';
import { GrpoBatchError, grpoGradients, type GrpoGradResult, packGrpoBatch, parseGrpoBatch, type PackedGrpoBatch } from '../../src/rl/grpo-batch.ts';
import type { LossAggMode } from '../../src/rl/loss.ts';
import { testGpu } from '../helpers/gpu.ts';
import { maxAbs, mixedError, relError } from '../helpers/random.ts';
import { FIXTURE_MODELS, readFixture } from '../helpers/tiny-qwen3.ts';

const GRPO = 'test/fixtures/grpo';
const MODEL_DIR = `${FIXTURE_MODELS}/gqa-tied`;
const LOSS_REL = 1e-6;
const LOGP_ABS = 1e-5;
const GRAD_REL = 2e-5;
/** Elementwise: |got − want| <= GRAD_RTOL·|want| + GRAD_ATOL·max|want|. */
const GRAD_RTOL = 2e-4;
const GRAD_ATOL = 4e-6;

interface Case {
  agg: LossAggMode;
  kl_coef: number;
  entropy_coef: number;
  norm_length: number;
  loss: number;
  clip_frac: number;
  clip_frac_lower: number;
}
interface Meta {
  temperature: number;
  clip_low: number;
  clip_high: number;
  dual_clip: number;
  cases: Record<string, Case>;
}

let gpu: Gpu;
let model: Qwen3Model;
let set: AdapterSet;
let meta: Meta;
let ref: Awaited<ReturnType<typeof readFixture>>;
let dir = '';

beforeAll(async () => {
  gpu = await testGpu();
  const { config, weights } = await loadQwen3(gpu, new DirectorySource(MODEL_DIR), { dtype: 'f32' });
  model = new Qwen3Model(gpu, config, weights);
  set = new AdapterSet();
  set.add((await loadPeft(gpu, new DirectorySource(`${MODEL_DIR}/adapter`), config, 'adapter')).adapter);
  set.add((await loadPeft(gpu, new DirectorySource(`${GRPO}/adapter2`), config, 'adapter2')).adapter);
  meta = JSON.parse(readFileSync(`${GRPO}/grpo.json`, 'utf8')) as Meta;
  ref = await readFixture(`${GRPO}/grpo.safetensors`);
  dir = await mkdtemp(join(tmpdir(), 'troupe-grpo-'));
});

afterAll(async () => {
  set?.release();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** `node bin/troupe.mjs ...args` as a user runs it (not through test/helpers/cli.ts: that imports every command). */
function spawnTroupe(args: string[]): { code: number; stdout: string; stderr: string } {
  const r = spawnSync('node', ['bin/troupe.mjs', ...args], { encoding: 'utf8', timeout: 300_000 });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

function zeroGrads(a: LoraAdapter): void {
  for (const p of a.parameters()) gpu.write(p.grad, new Float32Array(p.grad.size));
}

/** The response positions' logp, in order (what the fixture stores). */
function responseLogp(p: PackedGrpoBatch, r: GrpoGradResult): number[] {
  return Array.from(r.logp).filter((_, t) => p.mask[t] === 1);
}

/** Every LoRA gradient of `a` against the fixture's `${prefix}<PEFT key>`; the largest errors. */
async function compareGrads(a: LoraAdapter, prefix: string): Promise<{ rel: number; mixed: number }> {
  let rel = 0;
  let mixed = 0;
  const params = a.parameters();
  expect(params.length).toBeGreaterThan(0);
  for (const p of params) {
    const want = ref.get(prefix + p.name);
    expect(want, prefix + p.name).toBeDefined();
    const got = await gpu.readF32(p.grad);
    expect(maxAbs(want!.values)).toBeGreaterThan(0);
    rel = Math.max(rel, relError(got, want!.values));
    mixed = Math.max(mixed, mixedError(got, want!.values, GRAD_RTOL, GRAD_ATOL * maxAbs(want!.values)));
  }
  return { rel, mixed };
}

function optionsOf(c: Case) {
  return { temperature: meta.temperature, agg: c.agg, clipLow: meta.clip_low, clipHigh: meta.clip_high, dualClip: meta.dual_clip, klCoef: c.kl_coef, entropyCoef: c.entropy_coef };
}

describe('GRPO policy loss and LoRA gradients vs PyTorch + PEFT (verl semantics)', () => {
  for (const name of ['token-mean', 'seq-mean-token-mean', 'seq-mean-token-sum', 'seq-mean-token-sum-norm', 'kl-entropy']) {
    it(`3 sequences, ${name}`, async () => {
      const c = meta.cases[name]!;
      const seqs = parseGrpoBatch(readFileSync(`${GRPO}/batch.jsonl`, 'utf8'), { vocabSize: model.config.vocabSize });
      const p = packGrpoBatch(seqs);
      expect(p.maxResponse).toBe(c.norm_length);
      const a = set.get('adapter');
      zeroGrads(a);
      const rows = set.rows(p.rowAdapters.map(() => 'adapter'));
      const r = await grpoGradients(model, p, { adapter: rows, chunkRows: 16 }, optionsOf(c));
      rows.release();
      const lossErr = Math.abs(r.loss - c.loss) / Math.abs(c.loss);
      const logpErr = Math.max(...responseLogp(p, r).map((v, i) => Math.abs(v - ref.get('logp')!.values[i]!)));
      const g = await compareGrads(a, `${name}.`);
      expect(lossErr).toBeLessThan(LOSS_REL);
      expect(logpErr).toBeLessThan(LOGP_ABS);
      expect(r.clipFrac).toBeCloseTo(c.clip_frac, 6);
      expect(r.clipFracLower).toBeCloseTo(c.clip_frac_lower, 6);
      expect(r.clipFrac).toBeGreaterThan(0);
      expect(r.clipFracLower).toBeGreaterThan(0);
      expect(g.rel).toBeLessThan(GRAD_REL);
      expect(g.mixed).toBeLessThanOrEqual(1);
    }, 300_000);
  }

  it('a packed batch of 4 sequences through two adapters interleaved (the rows path): both adapters\' gradients', async () => {
    const c = meta.cases.packed!;
    const seqs = parseGrpoBatch(readFileSync(`${GRPO}/packed.jsonl`, 'utf8'), { vocabSize: model.config.vocabSize, adapters: set.names });
    expect(seqs.map((s) => s.adapter)).toEqual(['adapter', 'adapter2', 'adapter', 'adapter2']);
    expect(new Set(seqs.map((s) => s.response.length)).size).toBe(4);
    const p = packGrpoBatch(seqs);
    for (const n of set.names) zeroGrads(set.get(n));
    const rows = set.rows(p.rowAdapters);
    const r = await grpoGradients(model, p, { adapter: rows, chunkRows: 16 }, optionsOf(c));
    rows.release();
    const lossErr = Math.abs(r.loss - c.loss) / Math.abs(c.loss);
    const logpErr = Math.max(...responseLogp(p, r).map((v, i) => Math.abs(v - ref.get('packed.logp')!.values[i]!)));
    const ga = await compareGrads(set.get('adapter'), 'packed.adapter.');
    const gb = await compareGrads(set.get('adapter2'), 'packed.adapter2.');
    expect(lossErr).toBeLessThan(LOSS_REL);
    expect(logpErr).toBeLessThan(LOGP_ABS);
    expect(r.clipFrac).toBeCloseTo(c.clip_frac, 6);
    expect(r.clipFracLower).toBeCloseTo(c.clip_frac_lower, 6);
    for (const g of [ga, gb]) {
      expect(g.rel).toBeLessThan(GRAD_REL);
      expect(g.mixed).toBeLessThanOrEqual(1);
    }
  }, 300_000);

  it('batch lines are checked field by field; errors name the line and the field', () => {
    const good = { prompt: [1, 2], response: [3, 4], logp_old: [-1, -2], advantage: 0.5 };
    const parse = (lines: unknown[]) => parseGrpoBatch(lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n'), { vocabSize: 384, file: 'b.jsonl' });
    expect(parse([good, '', good])).toHaveLength(2);
    expect(() => parse([good, '{oops'])).toThrow(/b\.jsonl line 2: not valid JSON/);
    expect(() => parse([{ ...good, prompt: [1, 384] }])).toThrow(/line 1: "prompt"\[1\] = 384 is not a token id/);
    expect(() => parse([{ ...good, response: [3, 1.5] }])).toThrow(/"response"\[1\] = 1.5/);
    expect(() => parse([{ ...good, response: [] }])).toThrow(/"response" must be a non-empty list/);
    expect(() => parse([good, { ...good, logp_old: [-1] }])).toThrow(/line 2: "logp_old" has 1 values, "response" has 2 tokens/);
    expect(() => parse([{ ...good, logp_old: [-1, null] }])).toThrow(/"logp_old"\[1\] = null is not a finite log-probability/);
    expect(() => parse([{ ...good, advantage: 'x' }])).toThrow(/"advantage" = "x" is not a finite number/);
    expect(() => parse([{ ...good, advantage: undefined }])).toThrow(/missing field "advantage"/);
    expect(() => parse([{ ...good, adapter: 'gen' }])).toThrow(/unknown field "adapter"/);
    expect(() => parse([])).toThrow(GrpoBatchError);
    expect(() => parseGrpoBatch(JSON.stringify({ ...good, adapter: 'nope' }), { vocabSize: 384, adapters: ['gen'] })).toThrow(/"adapter" = "nope" is not one of gen/);
  });
});

describe('troupe grad --loss grpo', () => {
  it('writes the GRPO LoRA gradients under PEFT names (KL + entropy case) and the clip fractions', async () => {
    const c = meta.cases['kl-entropy']!;
    const out = join(dir, 'grpo-grad.safetensors');
    const args = ['grad', '--model', MODEL_DIR, '--adapter', `${MODEL_DIR}/adapter`, '--loss', 'grpo', '--temperature', '0.7', '--agg', c.agg];
    const r = spawnTroupe([...args, '--batch', `${GRPO}/batch.jsonl`, '--kl-coef', String(c.kl_coef), '--entropy-coef', String(c.entropy_coef), '--out', out]);
    expect(r.code, r.stderr).toBe(0);
    const last = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { loss: number; clip_frac: number; clip_frac_lower: number };
    expect(Object.keys(last)).toEqual(['loss', 'clip_frac', 'clip_frac_lower']);
    expect(Math.abs(last.loss - c.loss) / c.loss).toBeLessThan(LOSS_REL);
    expect(last.clip_frac).toBeCloseTo(c.clip_frac, 6);
    expect(last.clip_frac_lower).toBeCloseTo(c.clip_frac_lower, 6);
    const got = readSafetensorsBytes(new Uint8Array(await readFile(out)), out).tensors;
    const keys = [...ref.keys()].filter((k) => k.startsWith('kl-entropy.')).map((k) => k.slice('kl-entropy.'.length));
    expect([...got.keys()].sort()).toEqual(keys.sort());
    for (const k of keys) expect(relError(got.get(k)!.values, ref.get(`kl-entropy.${k}`)!.values), k).toBeLessThan(GRAD_REL);

    // a bad line: exit 1, the file, line and field named; GRPO options without --loss grpo: usage error
    const bad = join(dir, 'bad.jsonl');
    await writeFile(bad, `${readFileSync(`${GRPO}/batch.jsonl`, 'utf8').split('\n')[0]}\n{"prompt":[1],"response":[2,3],"logp_old":[-1],"advantage":1}\n`);
    const e = spawnTroupe([...args, '--batch', bad, '--out', join(dir, 'never.safetensors')]);
    expect(e.code).toBe(1);
    expect(e.stderr).toMatch(/bad\.jsonl line 2: "logp_old" has 1 values, "response" has 2 tokens/);
    const u = spawnTroupe(['grad', '--model', MODEL_DIR, '--full', '--ids', '1,2,3', '--kl-coef', '0.1', '--out', join(dir, 'never.safetensors')]);
    expect(u.code).toBe(2);
    expect(u.stderr).toMatch(/--kl-coef needs --loss grpo/);
  }, 300_000);
});
