// The shape of one CLI command. Each lives in src/cli/commands/<name>.ts and is listed in commands/index.ts.

export interface Command {
  /** The word after `troupe`. */
  name: string;
  /** One line for `troupe help`. */
  summary: string;
  /** Full usage text for `troupe help <name>` and `troupe <name> --help`. */
  usage: string;
  /** Runs with the arguments after the command name; resolves to the process exit code. */
  run(argv: string[]): Promise<number>;
}

/** Wrong arguments: main prints the message and the command's usage, and exits 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}
