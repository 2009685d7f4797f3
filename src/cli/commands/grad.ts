// `troupe grad`: a loss and its gradient with respect to a PEFT LoRA adapter's weights (or, with --full,
// every base weight), written as F32 safetensors under PEFT's (or Hugging Face's) key names: the numbers
// to compare with PyTorch + PEFT. --loss nll (default): the mean next-token NLL of one token sequence.
// --loss grpo: the clipped GRPO policy loss of a JSONL batch (src/rl/grpo-batch.ts), all lines packed
// into one batch. The adapter runs through AdapterSet.rows, the per-row path the rollout engine runs.
import { readFile } from 'node:fs/promises';
import { atomicWriteFile, checkWritable } from '../../util/atomic-write.ts';
import { Gpu } from '../../gpu/gpu.ts';
import type { Tensor } from '../../gpu/tensor.ts';
import { nextTokenBatch } from '../../model/backward.ts';
import { AdapterSet, fullParameters, type RowsTrainableAdapter, type TrainableParam } from '../../model/lora.ts';
import { loadPeft } from '../../model/peft.ts';
import { writeSafetensors } from '../../model/safetensors.ts';
import { DirectorySource } from '../../model/source.ts';
import { grpoGradients, packGrpoBatch, parseGrpoBatch } from '../../rl/grpo-batch.ts';
import { LOSS_AGG_MODES, type LossAggMode, releaseLossResult } from '../../rl/loss.ts';
import { numberOption, parse } from '../args.ts';
import { UsageError, type Command } from '../command.ts';
import { openModel, parseIds } from '../model-args.ts';
import { nllLossAndGradients } from '../../rl/nll-gradients.ts';

const GRPO_ONLY = ['batch', 'temperature', 'agg', 'clip-low', 'clip-high', 'dual-clip', 'kl-coef', 'entropy-coef', 'norm-length'] as const;

export const command: Command = {
  name: 'grad',
  summary: 'a loss (token NLL, or the GRPO policy loss of a batch) and its gradient wrt a LoRA adapter (or all weights), as safetensors',
  usage: [
    'usage: troupe grad --model DIR (--adapter PEFT_DIR | --full) --ids 1,2,3 --out FILE.safetensors [--dtype f32|f16]',
    '       troupe grad --model DIR (--adapter PEFT_DIR | --full) --loss grpo --batch FILE.jsonl --out FILE.safetensors',
    '                   [--temperature T] [--agg MODE] [--clip-low 0.2] [--clip-high 0.28] [--dual-clip 3|none]',
    '                   [--kl-coef X] [--entropy-coef X] [--norm-length N] [--dtype f32|f16]',
    '',
    '  --model DIR               a Qwen3ForCausalLM checkpoint (config.json + safetensors)',
    '  --adapter PEFT_DIR        a PEFT LoRA adapter (adapter_config.json + adapter_model.safetensors), scale alpha/r',
    '  --full                    full-parameter gradients of every base weight instead (no adapter)',
    '  --loss nll|grpo           nll (default): mean NLL of --ids; grpo: the clipped policy loss of --batch',
    '  --ids LIST                nll: comma-separated token ids of one sequence (at least 2)',
    '  --batch FILE.jsonl        grpo: one sequence a line, {"prompt":[ids],"response":[ids],"logp_old":[one per',
    '                            response token],"advantage":x}; every line packed into one batch, loss on the response',
    '  --temperature T           grpo: softmax temperature of logp (the sampling temperature; default 1)',
    `  --agg MODE                grpo: ${LOSS_AGG_MODES.join(' | ')} (default seq-mean-token-mean)`,
    '  --clip-low, --clip-high   grpo: ratio clip range (1 - low, 1 + high) (default 0.2, 0.28)',
    '  --dual-clip C|none        grpo: dual-clip bound for A < 0 (default 3)',
    '  --kl-coef X               grpo: k3 KL to the base model (the adapter off) with this coefficient (default 0)',
    '  --entropy-coef X          grpo: entropy bonus coefficient (default 0)',
    '  --norm-length N           grpo, seq-mean-token-sum-norm: divide by N (default: the longest response)',
    '  --out FILE                where to write the gradients: F32 safetensors, PEFT key names (--full: Hugging Face names)',
    '  --dtype f32|f16           base weight storage (default f32)',
    '',
    'The last line printed is {"loss": x} (nll), or {"loss": x, "clip_frac": y, "clip_frac_lower": z} (grpo:',
    'the fraction of response tokens where the clipped term won, and where A < 0 and the dual-clip bound won).',
  ].join('\n'),
  async run(argv) {
    const { values } = parse('grad', {
      args: argv,
      options: {
        model: { type: 'string' },
        adapter: { type: 'string' },
        full: { type: 'boolean' },
        loss: { type: 'string' },
        ids: { type: 'string' },
        batch: { type: 'string' },
        temperature: { type: 'string' },
        agg: { type: 'string' },
        'clip-low': { type: 'string' },
        'clip-high': { type: 'string' },
        'dual-clip': { type: 'string' },
        'kl-coef': { type: 'string' },
        'entropy-coef': { type: 'string' },
        'norm-length': { type: 'string' },
        out: { type: 'string' },
        dtype: { type: 'string' },
      },
    });
    const loss = values.loss ?? 'nll';
    if (loss !== 'nll' && loss !== 'grpo') throw new UsageError(`troupe grad: --loss must be nll or grpo, got "${loss}"`);
    if (values.model === undefined) throw new UsageError('troupe grad: --model is required');
    if (values.out === undefined) throw new UsageError('troupe grad: --out is required');
    await checkWritable(values.out);
    if ((values.adapter === undefined) === !values.full) throw new UsageError('troupe grad: give exactly one of --adapter or --full');
    let ids: number[] = [];
    if (loss === 'nll') {
      if (values.ids === undefined) throw new UsageError('troupe grad: --ids is required');
      const extra = GRPO_ONLY.find((k) => values[k] !== undefined);
      if (extra) throw new UsageError(`troupe grad: --${extra} needs --loss grpo`);
      ids = parseIds('grad', values.ids);
      if (ids.length < 2) throw new UsageError('troupe grad: --ids needs at least 2 tokens (one to predict from, one to predict)');
    } else {
      if (values.batch === undefined) throw new UsageError('troupe grad: --loss grpo needs --batch FILE.jsonl');
      if (values.ids !== undefined) throw new UsageError('troupe grad: --ids is for --loss nll; --loss grpo reads --batch');
    }
    const num = (k: (typeof GRPO_ONLY)[number], fallback: number) => numberOption('grad', k, values[k], fallback);
    const agg = (values.agg ?? 'seq-mean-token-mean') as LossAggMode;
    if (!LOSS_AGG_MODES.includes(agg)) throw new UsageError(`troupe grad: --agg must be one of ${LOSS_AGG_MODES.join(', ')}, got "${values.agg}"`);
    const grpo = {
      temperature: num('temperature', 1),
      agg,
      clipLow: num('clip-low', 0.2),
      clipHigh: num('clip-high', 0.28),
      dualClip: values['dual-clip'] === 'none' ? null : num('dual-clip', 3),
      klCoef: num('kl-coef', 0),
      entropyCoef: num('entropy-coef', 0),
      normLength: values['norm-length'] === undefined ? undefined : num('norm-length', 0),
    };
    if (!(grpo.temperature > 0)) throw new UsageError(`troupe grad: --temperature must be > 0, got ${grpo.temperature}`);
    const batchText = values.batch === undefined ? '' : await readFile(values.batch, 'utf8');
    const gpu = await Gpu.create();
    try {
      const { model } = await openModel(gpu, 'grad', { model: values.model, dtype: values.dtype ?? 'f32' });
      const set = new AdapterSet();
      const adapter = values.adapter !== undefined ? set.add((await loadPeft(gpu, new DirectorySource(values.adapter), model.config, 'grad')).adapter) : undefined;
      const params: TrainableParam[] = adapter ? adapter.parameters() : fullParameters(gpu, model.weights);
      const fullGrads = adapter ? undefined : new Map<Tensor, Tensor>(params.map((p) => [p.param, p.grad]));
      const rowsOf = (T: number): RowsTrainableAdapter | undefined => (adapter ? set.rows(new Array<string>(T).fill(adapter.name)) : undefined);
      let summary: Record<string, number>;
      if (loss === 'nll') {
        const batch = nextTokenBatch([ids]);
        const mask = gpu.upload(batch.mask, [ids.length], 'f32', 'grad.mask');
        const rows = rowsOf(ids.length);
        const { result, stats } = nllLossAndGradients(model, batch, mask, { adapter: rows, fullGrads });
        summary = { loss: (await gpu.readF32(result.loss))[0]! };
        rows?.release();
        releaseLossResult(result);
        for (const t of [stats.logp, stats.entropy, mask]) t.release();
      } else {
        const seqs = parseGrpoBatch(batchText, { vocabSize: model.config.vocabSize, maxTokens: model.config.maxPositionEmbeddings, file: values.batch });
        const packed = packGrpoBatch(seqs);
        const rows = rowsOf(packed.batch.ids.length);
        const r = await grpoGradients(model, packed, { adapter: rows, fullGrads }, grpo);
        rows?.release();
        summary = { loss: r.loss, clip_frac: r.clipFrac, clip_frac_lower: r.clipFracLower };
      }
      const tensors = [];
      for (const p of params) tensors.push({ name: p.name, dtype: 'F32' as const, shape: p.grad.shape, data: await gpu.readF32(p.grad) });
      await atomicWriteFile(values.out, writeSafetensors(tensors, { format: 'pt', loss: String(summary.loss) }));
      set.release();
      console.log(JSON.stringify(summary));
      return 0;
    } finally {
      gpu.destroy();
    }
  },
};
