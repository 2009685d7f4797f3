// `troupe grad`: the mean next-token NLL of one token sequence and its gradient with respect to a PEFT
// LoRA adapter's weights (or, with --full, every base weight), written as F32 safetensors under PEFT's
// (or Hugging Face's) key names: the numbers to compare with PyTorch + PEFT.
import { writeFile } from 'node:fs/promises';
import { Gpu } from '../../gpu/gpu.ts';
import type { Tensor } from '../../gpu/tensor.ts';
import { lossAndGradients, nextTokenBatch } from '../../model/backward.ts';
import { fullParameters, type TrainableParam } from '../../model/lora.ts';
import { loadPeft } from '../../model/peft.ts';
import { writeSafetensors } from '../../model/safetensors.ts';
import { DirectorySource } from '../../model/source.ts';
import { nllLoss, releaseLossResult } from '../../rl/loss.ts';
import { parse } from '../args.ts';
import { UsageError, type Command } from '../command.ts';
import { openModel, parseIds } from '../model-args.ts';

export const command: Command = {
  name: 'grad',
  summary: 'NLL of a token sequence and its gradient wrt a LoRA adapter (or all weights), as safetensors',
  usage: [
    'usage: troupe grad --model DIR (--adapter PEFT_DIR | --full) --ids 1,2,3 --out FILE.safetensors [--dtype f32|f16]',
    '',
    '  --model DIR               a Qwen3ForCausalLM checkpoint (config.json + safetensors)',
    '  --adapter PEFT_DIR        a PEFT LoRA adapter (adapter_config.json + adapter_model.safetensors), scale alpha/r',
    '  --full                    full-parameter gradients of every base weight instead (no adapter)',
    '  --ids LIST                comma-separated token ids of one sequence (at least 2)',
    '  --out FILE                where to write the gradients: F32 safetensors, PEFT key names (--full: Hugging Face names)',
    '  --dtype f32|f16           base weight storage (default f32)',
    '',
    'The loss is the mean NLL of ids[1:] predicted from ids[:-1]. The last line printed is {"loss": x}.',
  ].join('\n'),
  async run(argv) {
    const { values } = parse('grad', {
      args: argv,
      options: {
        model: { type: 'string' },
        adapter: { type: 'string' },
        full: { type: 'boolean' },
        ids: { type: 'string' },
        out: { type: 'string' },
        dtype: { type: 'string' },
      },
    });
    if (values.model === undefined) throw new UsageError('troupe grad: --model is required');
    if (values.ids === undefined) throw new UsageError('troupe grad: --ids is required');
    if (values.out === undefined) throw new UsageError('troupe grad: --out is required');
    if ((values.adapter === undefined) === !values.full) throw new UsageError('troupe grad: give exactly one of --adapter or --full');
    const ids = parseIds('grad', values.ids);
    if (ids.length < 2) throw new UsageError('troupe grad: --ids needs at least 2 tokens (one to predict from, one to predict)');
    const gpu = await Gpu.create();
    try {
      const { model } = await openModel(gpu, 'grad', { model: values.model, dtype: values.dtype ?? 'f32' });
      const adapter = values.adapter !== undefined ? (await loadPeft(gpu, new DirectorySource(values.adapter), model.config, 'grad')).adapter : undefined;
      const params: TrainableParam[] = adapter ? adapter.parameters() : fullParameters(gpu, model.weights);
      const fullGrads = adapter ? undefined : new Map<Tensor, Tensor>(params.map((p) => [p.param, p.grad]));
      const batch = nextTokenBatch([ids]);
      const mask = gpu.upload(batch.mask, [ids.length], 'f32', 'grad.mask');
      const { result, stats } = lossAndGradients(model, batch, (s) => nllLoss(gpu, { logp: s.logp, mask, seqStarts: batch.seqStarts }, { agg: 'token-mean' }), { adapter, fullGrads });
      const loss = (await gpu.readF32(result.loss))[0]!;
      const tensors = [];
      for (const p of params) tensors.push({ name: p.name, dtype: 'F32' as const, shape: p.grad.shape, data: await gpu.readF32(p.grad) });
      await writeFile(values.out, writeSafetensors(tensors, { format: 'pt', loss: String(loss) }));
      releaseLossResult(result);
      for (const t of [stats.logp, stats.entropy, mask]) t.release();
      console.log(JSON.stringify({ loss }));
      return 0;
    } finally {
      gpu.destroy();
    }
  },
};
