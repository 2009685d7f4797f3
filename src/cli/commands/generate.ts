// `troupe generate`: continuations of a prompt (text, chat or ids) through the rollout engine: batched
// prefill + paged-KV-cache decode, greedy or sampled on the GPU (temperature, top-p, seed); --n K draws
// K samples in one batch (streams 0..K-1 of the seed); --adapter applies a PEFT LoRA adapter.
import { Gpu } from '../../gpu/gpu.ts';
import { useTunedMatmuls } from '../run-setup.ts';
import { AdapterSet } from '../../model/lora.ts';
import { loadPeft } from '../../model/peft.ts';
import { DirectorySource } from '../../model/source.ts';
import { TokenizerError } from '../../model/tokenizer.ts';
import { RolloutEngine } from '../../rollout/engine.ts';
import { numberOption, parse } from '../args.ts';
import { UsageError, type Command } from '../command.ts';
import { checkIds, MODEL_OPTIONS, MODEL_USAGE, openModel, parseIds } from '../model-args.ts';
import { Progress } from '../progress.ts';

/** Pages of the engine's KV cache (its default page size). */
const PAGE_SIZE = 16;
/** The engine's default cap on sequences decoding at once: KV beyond that many is never used at once. */
const MAX_BATCH_SEQS = 256;

export class GenerateSizeError extends Error {
  override name = 'GenerateSizeError';
}

/**
 * The KV budget for `n` sequences of `tokens` tokens each: enough pages for as many of them at once as
 * the engine batches (and one layer's K buffer allows); the rest queue. Throws, with the numbers, when
 * not even one sequence fits in a buffer the GPU can bind.
 */
export function generateKvBudget(o: { n: number; tokens: number; layers: number; nKv: number; headDim: number; bytesPerElem: number; maxBindBytes: number }): { bytes: number; concurrent: number; pagesPerSeq: number } {
  const pagesPerSeq = Math.ceil(o.tokens / PAGE_SIZE) + 1;
  const pageBytesPerBuffer = PAGE_SIZE * o.nKv * o.headDim * o.bytesPerElem;
  const maxPages = Math.floor(o.maxBindBytes / pageBytesPerBuffer);
  if (pagesPerSeq > maxPages) {
    throw new GenerateSizeError(
      `troupe generate: one sequence of ${o.tokens} tokens needs ${pagesPerSeq} KV pages (${pagesPerSeq * pageBytesPerBuffer} bytes per layer's K buffer), ` +
        `but a buffer the GPU can bind (maxStorageBufferBindingSize ${o.maxBindBytes}) holds ${maxPages} pages: use a shorter prompt or fewer --max-new-tokens`,
    );
  }
  const concurrent = Math.min(o.n, MAX_BATCH_SEQS, Math.floor(maxPages / pagesPerSeq));
  return { bytes: concurrent * pagesPerSeq * pageBytesPerBuffer * 2 * o.layers, concurrent, pagesPerSeq };
}

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
      await useTunedMatmuls(gpu);
      const { model, tokenizer } = await openModel(gpu, 'generate', v);
      let prompt: number[];
      if (promptIds) {
        checkIds('generate', promptIds, model.config.vocabSize);
        prompt = promptIds;
      }
      else if (v.chat) prompt = tokenizer.encodeChat([{ role: 'user', content: v.prompt! }]);
      else prompt = tokenizer.encode(v.prompt!);
      const outside = promptIds ? undefined : prompt.find((id) => id >= model.config.vocabSize);
      if (outside !== undefined) {
        throw new TokenizerError(`${tokenizer.from}: prompt token id ${outside} is outside the model's vocabulary of ${model.config.vocabSize}: not this model's tokenizer (--ids takes token ids directly)`);
      }
      const adapters = new AdapterSet();
      if (v.adapter !== undefined) adapters.add((await loadPeft(gpu, new DirectorySource(v.adapter), model.config, 'adapter')).adapter);
      const c = model.config;
      if (prompt.length + maxNewTokens > c.maxPositionEmbeddings) {
        throw new GenerateSizeError(`troupe generate: ${prompt.length} prompt + ${maxNewTokens} new tokens exceed the model's max_position_embeddings ${c.maxPositionEmbeddings}`);
      }
      const kv = generateKvBudget({
        n,
        tokens: prompt.length + maxNewTokens,
        layers: c.numLayers,
        nKv: c.numKvHeads,
        headDim: c.headDim,
        bytesPerElem: gpu.f16 ? 2 : 4,
        maxBindBytes: gpu.limits.maxStorageBufferBindingSize,
      });
      const engine = new RolloutEngine(model, tokenizer, { adapters, kvBudgetBytes: kv.bytes, pageSize: PAGE_SIZE, maxBatchSeqs: MAX_BATCH_SEQS });
      engine.setRole('user', v.adapter === undefined ? null : 'adapter');
      const opts = { maxNewTokens, temperature: greedy ? 0 : temperature, topP, seed, ignoreEos: v['ignore-eos'] ?? false };
      // Progress in generated tokens (sequences that stop early end it before its total).
      const progress = new Progress({ label: 'generate', total: n * maxNewTokens });
      let finished = 0;
      let shown = 0;
      const show = () => {
        const t = engine.stats.tokens;
        if (t > shown) progress.tick(t - shown, `${finished}/${n} sequences`);
        shown = t;
      };
      const poll = setInterval(show, 250);
      let results;
      try {
        results = await Promise.all(
          Array.from({ length: n }, (_, k) =>
            engine.generate('user', prompt, { ...opts, stream: k }).then((r) => {
              finished++;
              return r;
            }),
          ),
        );
      } finally {
        clearInterval(poll);
      }
      show();
      progress.done(`${finished}/${n} sequences`);
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
