// Option parsing shared by commands: node:util parseArgs (works under Node and Deno), with its errors
// turned into UsageError so main prints the command's usage.
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { WANTED_FEATURES } from '../gpu/gpu.ts';
import { UsageError } from './command.ts';

/** parseArgs with strict checking; bad options throw UsageError naming the command. */
export function parse<T extends ParseArgsConfig>(command: string, config: T): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs<T>({ strict: true, ...config });
  } catch (e) {
    throw new UsageError(`troupe ${command}: ${(e as Error).message}`);
  }
}

/** A number option: integer or float text, or UsageError naming the option. */
export function numberOption(command: string, name: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const v = Number(text);
  if (text.trim() === '' || !Number.isFinite(v)) throw new UsageError(`troupe ${command}: --${name} must be a number, got "${text}"`);
  return v;
}

/** --disable FEATURE values: optional features troupe uses, or UsageError naming the unknown ones. */
export function disabledFeatures(command: string, values: string[] | undefined): string[] {
  const disable = values ?? [];
  const unknown = disable.filter((f) => !(WANTED_FEATURES as readonly string[]).includes(f));
  if (unknown.length) throw new UsageError(`troupe ${command}: --disable ${unknown.join(', ')}: not an optional feature troupe uses (${WANTED_FEATURES.join(', ')})`);
  return disable;
}
