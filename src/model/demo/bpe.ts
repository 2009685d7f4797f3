// A small byte-level BPE learner and the Hugging Face tokenizer files it makes, for the demo model
// (public/demo-model): the same pipeline as Qwen3's tokenizer.json (NFC, the same pre-tokenizer regex,
// so digits are split one by one, ByteLevel bytes -> unicode, a BPE model, the ByteLevel decoder), with
// 256 byte tokens, the merges learned here on the SFT corpus, and the ChatML special tokens.
// Deterministic: the most frequent pair wins, ties broken by the pair's text.

/** Qwen3's pre-tokenizer pattern, as it is written in tokenizer.json (Rust / Oniguruma syntax). */
export const QWEN3_SPLIT_PATTERN = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/** The same pattern in JavaScript syntax (no inline (?i:) group). */
export const QWEN3_SPLIT_RE = /'(?:[sS]|[tT]|[rR][eE]|[vV][eE]|[mM]|[lL][lL]|[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+/gu;

/** Special tokens of the demo tokenizer, in id order after the BPE vocabulary. */
export const DEMO_SPECIAL_TOKENS = ['<|endoftext|>', '<|im_start|>', '<|im_end|>', '<think>', '</think>'] as const;

/** GPT-2's byte -> printable unicode map (ByteLevel). */
export function bytesToUnicode(): string[] {
  const bs: number[] = [];
  for (let b = 33; b <= 126; b++) bs.push(b);
  for (let b = 161; b <= 172; b++) bs.push(b);
  for (let b = 174; b <= 255; b++) bs.push(b);
  const cs = [...bs];
  let n = 0;
  for (let b = 0; b < 256; b++) {
    if (!bs.includes(b)) {
      bs.push(b);
      cs.push(256 + n++);
    }
  }
  const out = new Array<string>(256);
  bs.forEach((b, i) => (out[b] = String.fromCodePoint(cs[i]!)));
  return out;
}

const BYTE_CHARS = bytesToUnicode();
const ENCODER = new TextEncoder();

/** Pre-tokenized words of `text` (special tokens removed first), each as its ByteLevel symbols. */
export function preTokenize(text: string, specials: readonly string[] = DEMO_SPECIAL_TOKENS): string[][] {
  let parts = [text.normalize('NFC')];
  for (const s of specials) parts = parts.flatMap((p) => p.split(s));
  const words: string[][] = [];
  for (const p of parts) {
    for (const m of p.matchAll(QWEN3_SPLIT_RE)) words.push([...ENCODER.encode(m[0])].map((b) => BYTE_CHARS[b]!));
  }
  return words;
}

/** `numMerges` merges (or fewer, when no pair occurs twice) learned on `texts`. */
export function learnMerges(texts: Iterable<string>, numMerges: number): [string, string][] {
  const counts = new Map<string, number>();
  for (const t of texts) for (const w of preTokenize(t)) counts.set(w.join('\u0000'), (counts.get(w.join('\u0000')) ?? 0) + 1);
  const words = [...counts].map(([k, n]) => ({ syms: k.split('\u0000'), n }));
  const merges: [string, string][] = [];
  for (let m = 0; m < numMerges; m++) {
    const pairs = new Map<string, number>();
    for (const w of words) {
      for (let i = 0; i + 1 < w.syms.length; i++) {
        const k = `${w.syms[i]}\u0000${w.syms[i + 1]}`;
        pairs.set(k, (pairs.get(k) ?? 0) + w.n);
      }
    }
    let best: string | null = null;
    let bestN = 1;
    for (const [k, n] of pairs) if (n > bestN || (n === bestN && best !== null && k < best)) [best, bestN] = [k, n];
    if (best === null) break;
    const [a, b] = best.split('\u0000') as [string, string];
    merges.push([a, b]);
    for (const w of words) {
      const out: string[] = [];
      for (let i = 0; i < w.syms.length; i++) {
        if (i + 1 < w.syms.length && w.syms[i] === a && w.syms[i + 1] === b) {
          out.push(a + b);
          i++;
        } else out.push(w.syms[i]!);
      }
      w.syms = out;
    }
  }
  return merges;
}

const CHATML_TEMPLATE =
  "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}{%- endfor %}" +
  "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";

type Json = Record<string, unknown>;

/** tokenizer.json and tokenizer_config.json of a byte-level BPE with these merges and the ChatML tokens. */
export function tokenizerFiles(merges: readonly (readonly [string, string])[]): { tokenizer: Json; config: Json; size: number } {
  const vocab: Record<string, number> = {};
  BYTE_CHARS.forEach((c, b) => (vocab[c] = b));
  let next = 256;
  for (const [a, b] of merges) {
    if (vocab[a] === undefined || vocab[b] === undefined) throw new Error(`merge ${a} ${b}: a part is not in the vocabulary`);
    if (vocab[a + b] === undefined) vocab[a + b] = next++;
  }
  const added = DEMO_SPECIAL_TOKENS.map((content, i) => ({ id: next + i, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true }));
  const byteLevel = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false };
  const tokenizer: Json = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer: { type: 'NFC' },
    pre_tokenizer: { type: 'Sequence', pretokenizers: [{ type: 'Split', pattern: { Regex: QWEN3_SPLIT_PATTERN }, behavior: 'Isolated', invert: false }, byteLevel] },
    post_processor: byteLevel,
    decoder: byteLevel,
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: '',
      end_of_word_suffix: '',
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab,
      merges: merges.map(([a, b]) => [a, b]),
    },
  };
  const decoder: Record<string, Json> = {};
  for (const t of added) decoder[String(t.id)] = { content: t.content, lstrip: false, normalized: false, rstrip: false, single_word: false, special: true };
  const config: Json = {
    add_bos_token: false,
    add_prefix_space: false,
    added_tokens_decoder: decoder,
    additional_special_tokens: ['<|im_start|>', '<|im_end|>'],
    bos_token: null,
    chat_template: CHATML_TEMPLATE,
    clean_up_tokenization_spaces: false,
    eos_token: '<|im_end|>',
    errors: 'replace',
    model_max_length: 1024,
    pad_token: '<|endoftext|>',
    split_special_tokens: false,
    tokenizer_class: 'Qwen2Tokenizer',
    unk_token: null,
  };
  return { tokenizer, config, size: next + added.length };
}
