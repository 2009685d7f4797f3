// `troupe generate`: continuations of a prompt (text, chat or ids) through the rollout engine: batched
// prefill + paged-KV-cache decode, greedy or sampled on the GPU (temperature, top-p, seed); --n K draws
// K samples in one batch (streams 0..K-1 of the seed); --adapter applies a PEFT LoRA adapter.
import { Gpu } from '../../gpu/gpu.ts';
import { AdapterSet } from '../../model/lora.ts';
import { loadPeft } from '../../model/peft.ts';
import { DirectorySource } from '../../model/source.ts';
import { TokenizerError } from '../../model/tokenizer.ts';
import { RolloutEngine } from '../../rollout/engine.ts';
import { numberOption, parse } from '../args.ts';
import { UsageError, type Command } from '../command.ts';
import { MODEL_OPTIONS, MODEL_USAGE, openModel, parseIds } from '../model-args.ts';

export const command: Command = {
  name: 'generate',
  summary: 'generate a continuation (prefill + KV-cache decode)',
  usage: [
    'usage: troupe generate (--model DIR | --random-weights PRESET) (--prompt TEXT | --ids LIST) [options]',
    '',
    ...MODEL_USAGE,
    '  --prompt TEXT             the prompt text (tokenized with the model\'s tokenizer)',
    '  --chat                    treat --prompt as one user message in the chat template (thinking off)',
    '  --ids LIST                the prompt as comma-separated token ids',
    '  --max-new-tokens N        tokens to generate (default 64; exact unless a stop token comes)',
    '  --greedy                  argmax decoding (default when no --temperature is given)',
    '  --temperature T           sample at temperature T (with --top-p P, default 1, and --seed S, default 0)',
    '  --top-p P',
    '  --seed S',
    '  --n K                     K samples of the prompt, batched (default 1)',
    '  --adapter DIR             apply a PEFT LoRA adapter (adapter_config.json + adapter_model.safetensors)',
    '  --ignore-eos              do not stop at eos / <|im_end|>',
    '  --json                    last line {"ids": [...], "text": "..."} (new tokens only); with --n, a list of K of them',
  ].join('\n'),
  async run(argv) {
    const { values: v } = parse('generate', {
      args: argv,
      options: {
        ...MODEL_OPTIONS,
        prompt: { type: 'string' },
        chat: { type: 'boolean' },
        ids: { type: 'string' },
        'max-new-tokens': { type: 'string' },
        greedy: { type: 'boolean' },
        temperature: { type: 'string' },
        'top-p': { type: 'string' },
        seed: { type: 'string' },
        'ignore-eos': { type: 'boolean' },
        n: { type: 'string' },
        adapter: { type: 'string' },
        json: { type: 'boolean' },
      },
    });
    if ((v.prompt === undefined) === (v.ids === undefined)) throw new UsageError('troupe generate: give exactly one of --prompt or --ids');
    if (v.chat && v.prompt === undefined) throw new UsageError('troupe generate: --chat needs --prompt');
    if (v.greedy && v.temperature !== undefined) throw new UsageError('troupe generate: --greedy and --temperature exclude each other');
    const maxNewTokens = numberOption('generate', 'max-new-tokens', v['max-new-tokens'], 64);
    if (!Number.isInteger(maxNewTokens) || maxNewTokens < 1) throw new UsageError(`troupe generate: --max-new-tokens must be a positive integer`);
    const n = numberOption('generate', 'n', v.n, 1);
    if (!Number.isInteger(n) || n < 1) throw new UsageError(`troupe generate: --n must be a positive integer`);
    const greedy = v.temperature === undefined;
    const temperature = numberOption('generate', 'temperature', v.temperature, 1);
    const topP = numberOption('generate', 'top-p', v['top-p'], 1);
    if (!(temperature >= 0)) throw new UsageError(`troupe generate: --temperature must be >= 0, got ${temperature}`);
    if (!(topP > 0 && topP <= 1)) throw new UsageError(`troupe generate: --top-p must be in (0, 1], got ${topP}`);
    const seed = numberOption('generate', 'seed', v.seed, 0);
    const promptIds = v.ids === undefined ? null : parseIds('generate', v.ids);
    const gpu = await Gpu.create();
    try {
      const { model, tokenizer } = await openModel(gpu, 'generate', v);
      let prompt: number[];
      if (promptIds) prompt = promptIds;
      else if (v.chat) prompt = tokenizer.encodeChat([{ role: 'user', content: v.prompt! }]);
      else prompt = tokenizer.encode(v.prompt!);
      const outside = promptIds ? undefined : prompt.find((id) => id >= model.config.vocabSize);
      if (outside !== undefined) {
        throw new TokenizerError(`${tokenizer.from}: prompt token id ${outside} is outside the model's vocabulary of ${model.config.vocabSize}: not this model's tokenizer (--ids takes token ids directly)`);
      }
      const adapters = new AdapterSet();
      if (v.adapter !== undefined) adapters.add((await loadPeft(gpu, new DirectorySource(v.adapter), model.config, 'adapter')).adapter);
      const pages = Math.ceil((prompt.length + maxNewTokens) / 16) + 1;
      const kvBytes = n * pages * 16 * 2 * model.config.numLayers * model.config.numKvHeads * model.config.headDim * 4;
      const engine = new RolloutEngine(model, tokenizer, { adapters, kvBudgetBytes: kvBytes });
      engine.setRole('user', v.adapter === undefined ? null : 'adapter');
      const opts = { maxNewTokens, temperature: greedy ? 0 : temperature, topP, seed, ignoreEos: v['ignore-eos'] ?? false };
      const results = await Promise.all(Array.from({ length: n }, (_, k) => engine.generate('user', prompt, { ...opts, stream: k })));
      await engine.close();
      const out = results.map((r) => ({ ids: r.ids, text: r.text }));
      if (v.json) console.log(JSON.stringify(n === 1 ? out[0] : out));
      else for (const o of out) console.log(o.text);
      return 0;
    } finally {
      gpu.destroy();
    }
  },
};
