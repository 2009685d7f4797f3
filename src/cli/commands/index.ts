// Every CLI command, in the order `troupe help` lists them. To add one: a file in this folder + one line here.
import type { Command } from '../command.ts';
import { command as bench } from './bench.ts';
import { command as doctor } from './doctor.ts';
import { command as evalCommand } from './eval.ts';
import { command as generate } from './generate.ts';
import { command as grad } from './grad.ts';
import { command as grade } from './grade.ts';
import { command as logits } from './logits.ts';
import { command as sft } from './sft.ts';
import { command as start } from './start.ts';
import { command as tokenize } from './tokenize.ts';
import { command as train } from './train.ts';
import { command as tune } from './tune.ts';

export const COMMANDS: Command[] = [
  start,
  doctor,
  bench,
  tune,
  tokenize,
  logits,
  generate,
  grade,
  grad,
  sft,
  train,
  evalCommand,
];
