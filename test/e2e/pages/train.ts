// Page module for browser-train.test.ts: loads a fixture model and its PEFT adapter over HTTP (UrlSource),
// computes the LoRA gradients of the fixture's sequence, takes 3 AdamW steps, then saves the adapter with
// savePeft and loads it back; returns the numbers for the test to check against the PEFT fixture.
import { Gpu } from '../../../src/gpu/gpu.ts';
import { lossAndGradients, nextTokenBatch } from '../../../src/model/backward.ts';
import { loadPeft, PEFT_CONFIG_FILE, PEFT_WEIGHTS_FILE, savePeft } from '../../../src/model/peft.ts';
import { Qwen3Model } from '../../../src/model/qwen3.ts';
import { MemorySource, UrlSource } from '../../../src/model/source.ts';
import { loadQwen3, releaseQwen3Weights } from '../../../src/model/weights.ts';
import { AdamW } from '../../../src/optim/adamw.ts';
import { nllLoss, releaseLossResult } from '../../../src/rl/loss.ts';

export interface TrainPageArgs {
  /** URL path of the model directory (with adapter/ inside). */
  base: string;
  ids: number[];
}

export interface TrainPageResult {
  runtime: string;
  loss: number;
  grads: Record<string, number[]>;
  /** Loss before each of 3 AdamW steps, and after the last. */
  losses: number[];
  /** Tensors in the saved adapter, and how many differ in any bit after loading it back. */
  savedTensors: number;
  roundTripMismatches: number;
  savedConfig: Record<string, unknown>;
}

export default async function run(args: TrainPageArgs): Promise<TrainPageResult> {
  const gpu = await Gpu.create();
  const base = new URL(args.base, location.href).href;
  const { config, weights } = await loadQwen3(gpu, new UrlSource(base, { opfs: false }), { dtype: 'f32' });
  const model = new Qwen3Model(gpu, config, weights);
  const { adapter } = await loadPeft(gpu, new UrlSource(base + 'adapter/', { opfs: false }), config, 'browser');
  const params = adapter.parameters();
  const batch = nextTokenBatch([args.ids]);
  const mask = gpu.upload(batch.mask, [args.ids.length], 'f32', 'mask');
  const nll = async (): Promise<number> => {
    const { result, stats } = lossAndGradients(model, batch, (s) => nllLoss(gpu, { logp: s.logp, mask, seqStarts: batch.seqStarts }), { adapter, chunkRows: 8 });
    const v = (await gpu.readF32(result.loss))[0]!;
    releaseLossResult(result);
    stats.logp.release();
    stats.entropy.release();
    return v;
  };

  const loss = await nll();
  const grads: Record<string, number[]> = {};
  for (const p of params) grads[p.name] = Array.from(await gpu.readF32(p.grad));

  const opt = new AdamW(gpu, params, { lr: 1e-2, weightDecay: 0 });
  const losses = [loss];
  for (let s = 0; s < 3; s++) {
    await opt.step(); // applies the gradients of the last nll() and zeroes them
    losses.push(await nll());
  }

  const files = await savePeft(gpu, adapter, { baseModel: 'fixture/gqa-tied' });
  const back = (await loadPeft(gpu, new MemorySource({ [PEFT_CONFIG_FILE]: files[PEFT_CONFIG_FILE], [PEFT_WEIGHTS_FILE]: files[PEFT_WEIGHTS_FILE] }, 'saved'), config, 'reloaded')).adapter;
  let mismatches = 0;
  let count = 0;
  const a = adapter.entries();
  const b = back.entries();
  if (a.length !== b.length) throw new Error(`reloaded adapter has ${b.length} modules, saved ${a.length}`);
  for (let i = 0; i < a.length; i++) {
    for (const k of ['A', 'B'] as const) {
      const x = new Uint32Array((await gpu.readF32(a[i]!.pair[k])).buffer);
      const y = new Uint32Array((await gpu.readF32(b[i]!.pair[k])).buffer);
      count++;
      if (x.length !== y.length || x.some((v, j) => v !== y[j])) mismatches++;
    }
  }
  const savedConfig = JSON.parse(new TextDecoder().decode(files[PEFT_CONFIG_FILE])) as Record<string, unknown>;
  const runtime = gpu.report.runtime;
  opt.release();
  back.release();
  adapter.release();
  mask.release();
  model.release();
  releaseQwen3Weights(weights);
  gpu.destroy();
  return { runtime, loss, grads, losses, savedTensors: count, roundTripMismatches: mismatches, savedConfig };
}
