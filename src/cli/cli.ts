// Dispatches `troupe <command> [args]` to a command of the registry; help, usage errors, exit codes.
import { type Command, UsageError } from './command.ts';
import { COMMANDS } from './commands/index.ts';

export function helpText(commands: readonly Command[] = COMMANDS): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  const lines = commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`);
  return [
    'troupe: WebGPU-native GRPO trainer for multi-agent LLM workflows (Qwen3 + LoRA)',
    '',
    'usage: troupe <command> [options]',
    '',
    'commands:',
    ...lines,
    '',
    "'troupe help <command>' or 'troupe <command> --help' shows a command's options.",
  ].join('\n');
}

/** Runs one command line (without the program name); resolves to the exit code. */
export async function runCli(argv: readonly string[], commands: readonly Command[] = COMMANDS): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === 'help' || name === '--help' || name === '-h') {
    const topic = name === 'help' ? rest[0] : undefined;
    if (topic === undefined) {
      console.log(helpText(commands));
      return 0;
    }
    const c = commands.find((x) => x.name === topic);
    if (!c) return unknown(topic, commands);
    console.log(c.usage);
    return 0;
  }
  const command = commands.find((c) => c.name === name);
  if (!command) return unknown(name, commands);
  if (rest.includes('--help') || rest.includes('-h')) {
    console.log(command.usage);
    return 0;
  }
  try {
    return await command.run(rest);
  } catch (e) {
    if (e instanceof UsageError) {
      console.error(`${e.message}\n\n${command.usage}`);
      return 2;
    }
    const err = e as Error;
    console.error(`troupe ${name}: ${err.name ?? 'Error'}: ${err.message ?? String(e)}`);
    if (process.env.TROUPE_DEBUG) console.error(err.stack);
    return 1;
  }
}

function unknown(name: string, commands: readonly Command[]): number {
  console.error(`troupe: unknown command "${name}"\n\n${helpText(commands)}`);
  return 2;
}
