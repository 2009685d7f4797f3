// `troupe generate`: a continuation of a prompt (text, chat or ids) with prefill + paged-KV-cache decode,
// greedy or sampled (temperature, top-p, seed) on the CPU.
import { Gpu } from '../../gpu/gpu.ts';
import { generate } from '../../model/generate.ts';
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
    '  --ignore-eos              do not stop at eos / <|im_end|>',
    '  --json                    last line {"ids": [...], "text": "..."} (new tokens only)',
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
        json: { type: 'boolean' },
      },
    });
    if ((v.prompt === undefined) === (v.ids === undefined)) throw new UsageError('troupe generate: give exactly one of --prompt or --ids');
    if (v.chat && v.prompt === undefined) throw new UsageError('troupe generate: --chat needs --prompt');
    if (v.greedy && v.temperature !== undefined) throw new UsageError('troupe generate: --greedy and --temperature exclude each other');
    const maxNewTokens = numberOption('generate', 'max-new-tokens', v['max-new-tokens'], 64);
    if (!Number.isInteger(maxNewTokens) || maxNewTokens < 0) throw new UsageError(`troupe generate: --max-new-tokens must be a non-negative integer`);
    const greedy = v.temperature === undefined;
    const temperature = numberOption('generate', 'temperature', v.temperature, 1);
    const topP = numberOption('generate', 'top-p', v['top-p'], 1);
    const seed = numberOption('generate', 'seed', v.seed, 0);
    const promptIds = v.ids === undefined ? null : parseIds('generate', v.ids);
    const gpu = await Gpu.create();
    try {
      const { model, tokenizer } = await openModel(gpu, 'generate', v);
      let prompt: number[];
      if (promptIds) prompt = promptIds;
      else if (v.chat) prompt = tokenizer.encodeChat([{ role: 'user', content: v.prompt! }]);
      else prompt = tokenizer.encode(v.prompt!);
      const stopIds = v['ignore-eos'] ? [] : [...new Set([...model.config.eosTokenIds, tokenizer.eosId, tokenizer.imEndId])];
      const [ids] = await generate(model, [prompt], { maxNewTokens, greedy, temperature, topP, seed, stopIds });
      const text = tokenizer.decode(ids!, { skipSpecialTokens: true });
      if (v.json) console.log(JSON.stringify({ ids, text }));
      else console.log(text);
      return 0;
    } finally {
      gpu.destroy();
    }
  },
};
