// Step 1 of the demo model (scripts/make-demo-model.sh): the SFT corpus and the tokenizer.
// Runs every workflow (src/workflows) on the demo task's train split with the scripted teacher
// (src/model/demo/teacher.ts) answering every role, records each turn as an SFT row
// {"workflow","role","slot","messages","completion"}, learns the BPE merges on the rendered rows, and
// writes tokenizer.json, tokenizer_config.json and the model's init config.json.
//   deno run -A scripts/demo-model/prepare.ts --out DIR [--seed 0] [--episodes 2] [--merges 320] [--hidden 64] [--layers 2]
//     [--careful 0.3] [--refine-careful 0.5] [--guess-right 0.15]   (the teacher's chance of working a turn out,
//     the same in an Eval-Opt refine turn, and the chance a guess is right: src/model/demo/teacher.ts)
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { learnMerges, tokenizerFiles } from '../../src/model/demo/bpe.ts';
import { buildDemoCorpus, chatmlText } from '../../src/model/demo/corpus.ts';
import { Qwen3Tokenizer } from '../../src/model/tokenizer.ts';

const { values } = parseArgs({
  options: {
    out: { type: 'string' },
    seed: { type: 'string', default: '0' },
    episodes: { type: 'string', default: '2' },
    merges: { type: 'string', default: '320' },
    hidden: { type: 'string', default: '64' },
    layers: { type: 'string', default: '2' },
    careful: { type: 'string', default: '0.3' },
    'refine-careful': { type: 'string', default: '0.5' },
    'guess-right': { type: 'string', default: '0.15' },
  },
});
if (!values.out) throw new Error('prepare.ts: --out DIR is required');
const seed = Number(values.seed);
const out = values.out;
mkdirSync(out, { recursive: true });

/** A probability flag: a number in [0, 1], or an error naming the flag. */
function chance(name: 'careful' | 'refine-careful' | 'guess-right'): number {
  const v = Number(values[name]);
  if (!(v >= 0 && v <= 1)) throw new Error(`prepare.ts: --${name} must be a probability in [0, 1], got ${values[name]}`);
  return v;
}
const rows = await buildDemoCorpus({ seed, episodes: Number(values.episodes), teacher: { careful: chance('careful'), refineCareful: chance('refine-careful'), guessRight: chance('guess-right') } });
writeFileSync(join(out, 'corpus.jsonl'), rows.map((r) => JSON.stringify(r)).join('\n') + '\n');

// The tokenizer: merges learned on the rows as the model sees them (chat template + completion).
const merges = learnMerges(rows.map(chatmlText), Number(values.merges));
const files = tokenizerFiles(merges);
writeFileSync(join(out, 'tokenizer.json'), JSON.stringify(files.tokenizer, null, 1) + '\n');
writeFileSync(join(out, 'tokenizer_config.json'), JSON.stringify(files.config, null, 2) + '\n');
const tok = new Qwen3Tokenizer(files.tokenizer, files.config, out);
let promptTok = 0;
let complTok = 0;
for (const r of rows) {
  promptTok += tok.encodeChat(r.messages).length;
  complTok += tok.encode(r.completion).length + 1;
}

const hidden = Number(values.hidden);
const vocab = Math.ceil(files.size / 64) * 64;
const config = {
  architectures: ['Qwen3ForCausalLM'],
  model_type: 'qwen3',
  attention_bias: false,
  attention_dropout: 0.0,
  bos_token_id: tok.endOfTextId,
  eos_token_id: tok.imEndId,
  pad_token_id: tok.padId,
  head_dim: hidden / 4,
  hidden_act: 'silu',
  hidden_size: hidden,
  initializer_range: 0.02,
  intermediate_size: hidden * 4,
  max_position_embeddings: 1024,
  max_window_layers: Number(values.layers),
  num_attention_heads: 4,
  num_hidden_layers: Number(values.layers),
  num_key_value_heads: 2,
  rms_norm_eps: 1e-6,
  rope_scaling: null,
  rope_theta: 10000,
  sliding_window: null,
  tie_word_embeddings: true,
  torch_dtype: 'float32',
  use_cache: true,
  use_sliding_window: false,
  vocab_size: vocab,
};
writeFileSync(join(out, 'config.json'), JSON.stringify(config, null, 2) + '\n');
const byRole: Record<string, number> = {};
for (const r of rows) byRole[`${r.workflow}/${r.role}`] = (byRole[`${r.workflow}/${r.role}`] ?? 0) + 1;
console.log(JSON.stringify({ rows: rows.length, merges: merges.length, tokenizerSize: files.size, vocab, promptTokens: promptTok, completionTokens: complTok, meanLen: (promptTok + complTok) / rows.length, byRole }));
