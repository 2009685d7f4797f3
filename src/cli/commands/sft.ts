// `troupe sft`: full-parameter supervised fine-tuning (or training from a random init) of a Qwen3 model
// on chat rows, through troupe's own backward (nllLossAndGradients: lm_head once a chunk, loss on the assistant's
// response tokens only) and AdamW with f32 master weights (the model is held in f32: AdamW on f16
// weights loses updates below half an f16 ulp). Writes a Hugging Face checkpoint directory
// (config.json, model.safetensors, the tokenizer files, generation_config.json). It made the demo model.
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { atomicWriteFile } from '../../util/atomic-write.ts';
import { join } from 'node:path';
import { Gpu } from '../../gpu/gpu.ts';
import { useTunedMatmuls } from '../run-setup.ts';
import type { Tensor } from '../../gpu/tensor.ts';
import { nextTokenBatch } from '../../model/backward.ts';
import { parseQwen3Config, type Qwen3Config } from '../../model/config.ts';
import { fullParameters } from '../../model/lora.ts';
import { Qwen3Model } from '../../model/qwen3.ts';
import { writeSafetensors } from '../../model/safetensors.ts';
import { DirectorySource } from '../../model/source.ts';
import { type ChatMessage, Qwen3Tokenizer, TOKENIZER_FILES } from '../../model/tokenizer.ts';
import { loadQwen3, randomQwen3Weights, releaseQwen3Weights } from '../../model/weights.ts';
import { AdamW } from '../../optim/adamw.ts';
import { cosineWithWarmup } from '../../optim/schedule.ts';
import { releaseLossResult } from '../../rl/loss.ts';
import { mulberry32 } from '../../util/mulberry32.ts';
import { numberOption, parse } from '../args.ts';
import { UsageError, type Command } from '../command.ts';
import { resolveModelDir } from '../model-args.ts';
import { Progress } from '../progress.ts';
import { nllLossAndGradients } from '../../rl/nll-gradients.ts';

export class SftDataError extends Error {
  override name = 'SftDataError';
}

/** One training row: the chat so far (rendered with the generation prompt) and the assistant's reply. */
export interface SftRow {
  messages: ChatMessage[];
  completion: string;
}

/** Token ids of a row and how many of them are prompt (the loss covers the rest: reply + <|im_end|>). */
export interface SftExample {
  ids: number[];
  promptLen: number;
}

/** Rows of a JSONL file: `{"messages": [...], "completion": "..."}` (other fields ignored); or messages whose last is the assistant's. */
export function parseSftJsonl(text: string, file = 'data'): SftRow[] {
  const rows: SftRow[] = [];
  text.split('\n').forEach((line, i) => {
    if (line.trim() === '') return;
    let j: unknown;
    try {
      j = JSON.parse(line);
    } catch (e) {
      throw new SftDataError(`${file}:${i + 1}: not JSON (${(e as Error).message})`);
    }
    const r = j as { messages?: unknown; completion?: unknown };
    if (!Array.isArray(r.messages) || r.messages.some((m) => typeof m?.role !== 'string' || typeof m?.content !== 'string')) {
      throw new SftDataError(`${file}:${i + 1}: needs "messages", a list of {role, content} strings`);
    }
    let messages = r.messages as ChatMessage[];
    let completion = r.completion;
    if (completion === undefined && messages.at(-1)?.role === 'assistant') {
      completion = messages.at(-1)!.content;
      messages = messages.slice(0, -1);
    }
    if (typeof completion !== 'string') throw new SftDataError(`${file}:${i + 1}: needs a "completion" string (or an assistant message last)`);
    if (!messages.length) throw new SftDataError(`${file}:${i + 1}: no prompt messages`);
    rows.push({ messages, completion });
  });
  if (!rows.length) throw new SftDataError(`${file}: no rows`);
  return rows;
}

/** Prompt = the chat template with the generation prompt; target = the reply's tokens and <|im_end|>. */
export function encodeSftRow(tok: Qwen3Tokenizer, row: SftRow, maxLen: number): SftExample {
  const prompt = tok.encodeChat(row.messages);
  const reply = [...tok.encode(row.completion), tok.imEndId];
  const ids = [...prompt, ...reply].slice(0, maxLen);
  return { ids, promptLen: Math.min(prompt.length, ids.length) };
}

/** The packed batch with the loss mask on reply tokens: position t predicts ids[t+1]. */
export function sftBatch(examples: readonly SftExample[]): ReturnType<typeof nextTokenBatch> & { targetTokens: number } {
  const b = nextTokenBatch(examples.map((e) => e.ids));
  let o = 0;
  let n = 0;
  for (const e of examples) {
    for (let t = 0; t < e.ids.length; t++) {
      const on = t + 1 < e.ids.length && t + 1 >= e.promptLen;
      b.mask[o + t] = on ? 1 : 0;
      if (on) n++;
    }
    o += e.ids.length;
  }
  return { ...b, targetTokens: n };
}

function configJson(c: Qwen3Config, raw: Record<string, unknown>, dtype: 'float32' | 'bfloat16'): Record<string, unknown> {
  return { ...raw, architectures: ['Qwen3ForCausalLM'], model_type: 'qwen3', vocab_size: c.vocabSize, tie_word_embeddings: c.tieWordEmbeddings, torch_dtype: dtype };
}

export const command: Command = {
  name: 'sft',
  summary: 'full-parameter SFT of a Qwen3 model (or one from a random init) on chat rows; writes a checkpoint',
  usage: [
    'usage: troupe sft (--init-config FILE.json | --model DIR|demo) [--tokenizer DIR] --data FILE.jsonl --out DIR',
    '                  [--steps N] [--batch N] [--lr X] [--warmup N] [--weight-decay X] [--max-len N] [--seed S]',
    '                  [--save-dtype f32|bf16] [--max-seconds S]',
    '',
    '  --init-config FILE.json   a Qwen3ForCausalLM config.json: train from random weights (N(0, 0.02²), seeded by --seed)',
    '  --model DIR|demo          start from this checkpoint instead',
    '  --tokenizer DIR           tokenizer.json + tokenizer_config.json (default: the --model directory, or the',
    "                            --init-config file's directory)",
    '  --data FILE.jsonl         rows {"messages": [{"role","content"}...], "completion": "..."} (or the assistant',
    '                            message last); loss on the completion and <|im_end|> only',
    '  --out DIR                 the checkpoint: config.json, model.safetensors, tokenizer files, generation_config.json',
    '  --steps N                 optimizer steps (default 100; 0 writes the initial weights)',
    '  --batch N                 rows per step (default 16), drawn in seeded epochs over the data',
    '  --lr X                    peak learning rate (default 1e-3), linear warm-up then cosine to 0',
    '  --warmup N                warm-up steps (default 5% of --steps)',
    '  --weight-decay X          AdamW weight decay (default 0.01); gradients clipped to norm 1',
    '  --max-len N               tokens per row at most (default 1024), cut at the end',
    '  --seed S                  init and data order (default 0)',
    '  --save-dtype f32|bf16     weights in model.safetensors (default f32)',
    '  --max-seconds S           a time budget: after 15 steps, --steps is lowered to what fits in S seconds',
    '                            (the schedule is rescaled), and training stops at S whatever happens',
    '',
    'Weights are f32 on the GPU throughout (f32 masters). Progress on stderr; the last stdout line is',
    '{"steps","loss","firstLoss","tokens","out"} (loss: mean of the last 10% of steps).',
  ].join('\n'),
  async run(argv) {
    const { values } = parse('sft', {
      args: argv,
      options: {
        'init-config': { type: 'string' },
        model: { type: 'string' },
        tokenizer: { type: 'string' },
        data: { type: 'string' },
        out: { type: 'string' },
        steps: { type: 'string' },
        batch: { type: 'string' },
        lr: { type: 'string' },
        warmup: { type: 'string' },
        'weight-decay': { type: 'string' },
        'max-len': { type: 'string' },
        seed: { type: 'string' },
        'save-dtype': { type: 'string' },
        'max-seconds': { type: 'string' },
      },
    });
    if ((values['init-config'] === undefined) === (values.model === undefined)) throw new UsageError('troupe sft: give exactly one of --init-config or --model');
    if (values.data === undefined) throw new UsageError('troupe sft: --data is required');
    if (values.out === undefined) throw new UsageError('troupe sft: --out is required');
    const int = (name: string, fallback: number, min: number): number => {
      const v = numberOption('sft', name, values[name as keyof typeof values] as string | undefined, fallback);
      if (!Number.isInteger(v) || v < min) throw new UsageError(`troupe sft: --${name} must be an integer >= ${min}, got ${v}`);
      return v;
    };
    let steps = int('steps', 100, 0);
    const maxSeconds = numberOption('sft', 'max-seconds', values['max-seconds'], Infinity);
    if (!(maxSeconds > 0)) throw new UsageError(`troupe sft: --max-seconds must be > 0, got ${maxSeconds}`);
    const batchSize = int('batch', 16, 1);
    const maxLen = int('max-len', 1024, 2);
    const seed = int('seed', 0, 0);
    const warmup = int('warmup', Math.ceil(steps * 0.05), 0);
    const lr = numberOption('sft', 'lr', values.lr, 1e-3);
    const weightDecay = numberOption('sft', 'weight-decay', values['weight-decay'], 0.01);
    if (!(lr > 0)) throw new UsageError(`troupe sft: --lr must be > 0, got ${lr}`);
    const saveDtype = values['save-dtype'] ?? 'f32';
    if (saveDtype !== 'f32' && saveDtype !== 'bf16') throw new UsageError(`troupe sft: --save-dtype must be f32 or bf16, got "${saveDtype}"`);

    const modelDir = values.model !== undefined ? resolveModelDir(values.model) : undefined;
    const initFile = values['init-config'];
    const tokDir = values.tokenizer ?? modelDir ?? (initFile !== undefined ? join(initFile, '..') : undefined)!;
    const tokenizer = await Qwen3Tokenizer.load(new DirectorySource(tokDir), { required: true });
    const rows = parseSftJsonl(await readFile(values.data, 'utf8'), values.data);
    const examples = rows.map((r) => encodeSftRow(tokenizer, r, maxLen));

    const gpu = await Gpu.create();
    try {
      await useTunedMatmuls(gpu);
      let config: Qwen3Config;
      let raw: Record<string, unknown>;
      let model: Qwen3Model;
      if (initFile !== undefined) {
        raw = JSON.parse(await readFile(initFile, 'utf8')) as Record<string, unknown>;
        config = parseQwen3Config(raw, initFile);
        model = new Qwen3Model(gpu, config, randomQwen3Weights(gpu, config, seed, { dtype: 'f32' }));
      } else {
        const source = new DirectorySource(modelDir!);
        raw = JSON.parse(await source.readText('config.json')) as Record<string, unknown>;
        const loaded = await loadQwen3(gpu, source, { dtype: 'f32' });
        config = loaded.config;
        model = new Qwen3Model(gpu, config, loaded.weights);
      }
      if (tokenizer.vocabSize > config.vocabSize) throw new SftDataError(`the tokenizer has ${tokenizer.vocabSize} tokens, the model's vocabulary ${config.vocabSize}`);
      const tooLong = examples.findIndex((e) => e.ids.length > config.maxPositionEmbeddings);
      if (tooLong >= 0) throw new SftDataError(`${values.data}: row ${tooLong + 1} has ${examples[tooLong]!.ids.length} tokens, over max_position_embeddings ${config.maxPositionEmbeddings} (use --max-len)`);
      const trainable = examples.filter((e) => e.ids.length > e.promptLen);
      if (!trainable.length) throw new SftDataError(`${values.data}: no row has a completion token within --max-len ${maxLen}`);

      const params = fullParameters(gpu, model.weights);
      const fullGrads = new Map<Tensor, Tensor>(params.map((p) => [p.param, p.grad]));
      const opt = new AdamW(gpu, params, { lr, weightDecay, maxGradNorm: 1.0 }, 'sft');
      let schedule = cosineWithWarmup({ lr, warmupSteps: warmup, totalSteps: Math.max(1, steps) });

      // Seeded epochs: a fresh shuffle of the rows each time the order runs out.
      const rand = mulberry32((seed ^ 0x5f7a3c1d) >>> 0);
      let order: number[] = [];
      const nextRow = (): SftExample => {
        if (!order.length) {
          order = trainable.map((_, i) => i);
          for (let i = order.length - 1; i > 0; i--) {
            const j = Math.floor(rand() * (i + 1));
            [order[i], order[j]] = [order[j]!, order[i]!];
          }
        }
        return trainable[order.pop()!]!;
      };

      const losses: number[] = [];
      let tokens = 0;
      let progress = new Progress({ label: 'sft', total: steps });
      const started = Date.now();
      // Calibration for --max-seconds: the rate over steps 5..15 (the first steps compile shaders).
      const [CAL_FROM, CAL_TO] = [5, 15];
      let calStart = 0;
      let done = 0;
      for (let step = 0; step < steps; step++) {
        const elapsed = (Date.now() - started) / 1000;
        if (elapsed > maxSeconds) {
          console.error(`sft: stopped at step ${step} of ${steps}: --max-seconds ${maxSeconds} reached`);
          break;
        }
        if (step === CAL_FROM) calStart = elapsed;
        if (step === CAL_TO && Number.isFinite(maxSeconds)) {
          const per = (elapsed - calStart) / (CAL_TO - CAL_FROM);
          const fit = CAL_TO + Math.floor((maxSeconds - elapsed) / per);
          if (fit < steps) {
            console.error(`sft: ${per.toFixed(3)} s/step: ${fit} steps fit in --max-seconds ${maxSeconds}, not ${steps}`);
            steps = Math.max(fit, CAL_TO + 1);
            schedule = cosineWithWarmup({ lr, warmupSteps: Math.min(warmup, CAL_TO), totalSteps: steps });
            progress = new Progress({ label: 'sft', total: steps - step });
          }
        }
        const batch = sftBatch(Array.from({ length: batchSize }, nextRow));
        const T = batch.ids.length;
        const mask = gpu.upload(batch.mask, [T], 'f32', 'sft.mask');
        const { result, stats } = nllLossAndGradients(model, batch, mask, { fullGrads });
        const loss = (await gpu.readF32(result.loss))[0]!;
        releaseLossResult(result);
        for (const t of [stats.logp, stats.entropy, mask]) t.release();
        const r = await opt.step(schedule(step));
        opt.zeroGrad();
        losses.push(loss);
        tokens += T;
        done++;
        progress.tick(1, `loss ${loss.toFixed(4)} lr ${r.lr.toExponential(2)} grad ${r.gradNorm.toFixed(3)}${r.skipped ? ' (skipped)' : ''}`);
      }
      progress.done();

      // The checkpoint.
      await mkdir(values.out, { recursive: true });
      const tensors = [];
      for (const p of params) {
        const v = await gpu.readF32(p.param);
        tensors.push({ name: p.name, dtype: saveDtype === 'f32' ? ('F32' as const) : ('BF16' as const), shape: p.param.shape, data: v });
      }
      await atomicWriteFile(join(values.out, 'model.safetensors'), writeSafetensors(tensors, { format: 'pt' }));
      await atomicWriteFile(join(values.out, 'config.json'), JSON.stringify(configJson(config, raw, saveDtype === 'f32' ? 'float32' : 'bfloat16'), null, 2) + '\n');
      const gen = { bos_token_id: tokenizer.endOfTextId, eos_token_id: [tokenizer.imEndId, tokenizer.endOfTextId], pad_token_id: tokenizer.padId, do_sample: true, temperature: 0.7, top_p: 1.0 };
      await atomicWriteFile(join(values.out, 'generation_config.json'), JSON.stringify(gen, null, 2) + '\n');
      const src = new DirectorySource(tokDir);
      for (const f of TOKENIZER_FILES) {
        const from = join(tokDir, f);
        const to = join(values.out, f);
        if (from !== to) await copyFile(from, to).catch(async () => writeFile(to, await src.readText(f)));
      }
      for (const p of params) p.grad.release();
      opt.release();
      releaseQwen3Weights(model.weights);
      const tail = losses.slice(Math.floor(losses.length * 0.9));
      const mean = tail.length ? tail.reduce((a, b) => a + b, 0) / tail.length : null;
      console.log(JSON.stringify({ steps: done, loss: mean, firstLoss: losses[0] ?? null, tokens, out: values.out }));
      return 0;
    } finally {
      gpu.destroy();
    }
  },
};
