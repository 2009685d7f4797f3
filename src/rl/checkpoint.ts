// A run directory on disk (Node and Deno; the browser keeps runs in memory):
//   config.json                  what the run was started with (resume reads it back)
//   metrics.jsonl, samples.jsonl records as the trainer emits them
//   checkpoints/step-NNNNNN/     state.json, adapters/<name>/ (PEFT), optimizer/<name>.safetensors
//   checkpoints/latest.json      the newest complete checkpoint
//   adapters/<name>/             the final adapters (PEFT), report.html
// A checkpoint is written into a temporary directory and renamed into place, then latest.json is
// replaced atomically: a process killed mid-checkpoint leaves the previous one intact and named.
// The checkpoint records the byte lengths of metrics.jsonl and samples.jsonl, so a resumed run drops
// the lines written after it and continues exactly.
import { mkdir, open, readdir, readFile, rename, rm, stat, truncate } from 'node:fs/promises';
import { join } from 'node:path';
import { atomicWriteFile } from '../util/atomic-write.ts';
import { PEFT_CONFIG_FILE, PEFT_WEIGHTS_FILE, type PeftFiles } from '../model/peft.ts';
import type { TrainerState } from './trainer.ts';

export class CheckpointError extends Error {
  override name = 'CheckpointError';
}

export const RUN_FILES = { config: 'config.json', metrics: 'metrics.jsonl', samples: 'samples.jsonl', checkpoints: 'checkpoints', latest: 'latest.json', adapters: 'adapters', report: 'report.html' } as const;

interface StateJson {
  format: 'troupe-checkpoint-1';
  step: number;
  skippedSteps: number;
  skippedInARow: number;
  adapters: string[];
  metricsBytes: number;
  samplesBytes: number;
}

async function syncedWrite(path: string, data: Uint8Array | string): Promise<void> {
  const f = await open(path, 'w');
  try {
    await f.writeFile(data);
    await f.sync();
  } finally {
    await f.close();
  }
}

async function writePeft(dir: string, files: PeftFiles): Promise<void> {
  await mkdir(dir, { recursive: true });
  for (const [name, bytes] of Object.entries(files)) await syncedWrite(join(dir, name), bytes);
}

async function sizeOf(path: string): Promise<number> {
  try {
    return (await stat(path)).size;
  } catch {
    return 0;
  }
}

const stepDir = (step: number) => `step-${String(step).padStart(6, '0')}`;

/** Writes a checkpoint of `state` and points latest.json at it; keeps the newest `keep` checkpoints. */
export async function saveCheckpoint(runDir: string, state: TrainerState, keep = 2): Promise<string> {
  const root = join(runDir, RUN_FILES.checkpoints);
  await mkdir(root, { recursive: true });
  const name = stepDir(state.step);
  const tmp = join(root, `.tmp-${name}-${Date.now()}`);
  await mkdir(join(tmp, 'optimizer'), { recursive: true });
  const json: StateJson = {
    format: 'troupe-checkpoint-1',
    step: state.step,
    skippedSteps: state.skippedSteps,
    skippedInARow: state.skippedInARow,
    adapters: Object.keys(state.adapters),
    metricsBytes: await sizeOf(join(runDir, RUN_FILES.metrics)),
    samplesBytes: await sizeOf(join(runDir, RUN_FILES.samples)),
  };
  try {
    for (const [a, files] of Object.entries(state.adapters)) await writePeft(join(tmp, 'adapters', a), files);
    for (const [a, bytes] of Object.entries(state.optimizers)) await syncedWrite(join(tmp, 'optimizer', `${a}.safetensors`), bytes);
    await syncedWrite(join(tmp, 'state.json'), JSON.stringify(json, null, 2) + '\n');
    await rm(join(root, name), { recursive: true, force: true });
    await rename(tmp, join(root, name));
  } catch (e) {
    await rm(tmp, { recursive: true, force: true });
    throw new CheckpointError(`checkpoint ${join(root, name)}: ${(e as Error).message}`);
  }
  await atomicWriteFile(join(root, RUN_FILES.latest), JSON.stringify({ step: state.step, dir: name }) + '\n');
  const old = (await readdir(root)).filter((d) => /^step-\d{6}$/.test(d) && d !== name).sort();
  for (const d of old.slice(0, Math.max(0, old.length - (keep - 1)))) await rm(join(root, d), { recursive: true, force: true });
  return join(root, name);
}

/** The newest complete checkpoint of a run directory, with the metrics byte lengths it saw. */
export async function loadCheckpoint(runDir: string): Promise<{ state: TrainerState; metricsBytes: number; samplesBytes: number; dir: string }> {
  const root = join(runDir, RUN_FILES.checkpoints);
  let latest: { step: number; dir: string };
  try {
    latest = JSON.parse(await readFile(join(root, RUN_FILES.latest), 'utf8'));
  } catch (e) {
    throw new CheckpointError(`${runDir}: no checkpoint to resume from (${join(root, RUN_FILES.latest)}: ${(e as Error).message})`);
  }
  const dir = join(root, latest.dir);
  let json: StateJson;
  try {
    json = JSON.parse(await readFile(join(dir, 'state.json'), 'utf8'));
  } catch (e) {
    throw new CheckpointError(`${dir}/state.json: unreadable (${(e as Error).message})`);
  }
  if (json.format !== 'troupe-checkpoint-1') throw new CheckpointError(`${dir}/state.json: not a troupe checkpoint (format ${json.format})`);
  const adapters: Record<string, PeftFiles> = {};
  const optimizers: Record<string, Uint8Array> = {};
  for (const a of json.adapters) {
    adapters[a] = await readPeftDir(join(dir, 'adapters', a));
    optimizers[a] = new Uint8Array(await readFile(join(dir, 'optimizer', `${a}.safetensors`)));
  }
  return {
    state: { step: json.step, skippedSteps: json.skippedSteps, skippedInARow: json.skippedInARow, adapters, optimizers },
    metricsBytes: json.metricsBytes,
    samplesBytes: json.samplesBytes,
    dir,
  };
}

/** The two files of a PEFT adapter directory. */
export async function readPeftDir(dir: string): Promise<PeftFiles> {
  const read = async (f: string) => {
    try {
      return new Uint8Array(await readFile(join(dir, f)));
    } catch (e) {
      throw new CheckpointError(`${join(dir, f)}: unreadable (${(e as Error).message})`);
    }
  };
  return { [PEFT_CONFIG_FILE]: await read(PEFT_CONFIG_FILE), [PEFT_WEIGHTS_FILE]: await read(PEFT_WEIGHTS_FILE) };
}

/** Cuts a JSONL file back to the length a checkpoint saw (lines written after it are dropped). */
export async function truncateTo(path: string, bytes: number): Promise<void> {
  if ((await sizeOf(path)) > bytes) await truncate(path, bytes);
}

/** Writes the final adapters (PEFT) under RUNDIR/adapters/<name>/, each directory renamed into place. */
export async function saveAdapters(runDir: string, adapters: { name: string; files: PeftFiles }[]): Promise<string[]> {
  const root = join(runDir, RUN_FILES.adapters);
  await mkdir(root, { recursive: true });
  const out: string[] = [];
  for (const { name, files } of adapters) {
    const tmp = join(root, `.tmp-${name}-${Date.now()}`);
    await writePeft(tmp, files);
    await rm(join(root, name), { recursive: true, force: true });
    await rename(tmp, join(root, name));
    out.push(join(root, name));
  }
  return out;
}
