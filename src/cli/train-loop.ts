// The CLI's training run over a Trainer: run directory, metrics.jsonl / samples.jsonl, validation every
// K steps (and before the first), checkpoints every K steps, exact resume, a progress bar with ETA and
// per-role reward on a terminal (one line per step otherwise), the final adapters and report.html.
import { appendFile, mkdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { GpuDeviceLostError } from '../gpu/errors.ts';
import { parseMetricsJsonl, parseSamplesJsonl } from '../metrics/jsonl.ts';
import { renderReport } from '../metrics/report.ts';
import type { MetricsRecord, SampleRecord, StepRecord, ValidationRecord } from '../metrics/schema.ts';
import { loadCheckpoint, RUN_FILES, saveAdapters, saveCheckpoint, truncateTo } from '../rl/checkpoint.ts';
import { atomicWriteFile } from '../util/atomic-write.ts';
import type { Trainer } from '../rl/trainer.ts';
import { Progress } from './progress.ts';

export interface TrainLoopOptions {
  runDir: string;
  /** Continue from the run directory's latest checkpoint. */
  resume: boolean;
  checkpointEvery: number;
  /** Stop (with a checkpoint, resumable) once this many steps are done, before the configured total. */
  stopAfter?: number;
  /** Where progress and per-step lines go (stderr by default). */
  log?: { write(s: string): unknown; isTTY?: boolean };
}

export interface TrainLoopResult {
  runDir: string;
  before: ValidationRecord | null;
  after: ValidationRecord | null;
  steps: number;
}

export class TrainRunError extends Error {
  override name = 'TrainRunError';
}

const fmt = (x: number | null | undefined, d = 2) => (x === null || x === undefined || !Number.isFinite(x) ? '-' : x.toFixed(d));

/** One line per step: overall reward, then each role's reward / accuracy / length / grad norm. */
export function stepLine(r: StepRecord, total: number): string {
  const roles = Object.entries(r.roles)
    .map(([role, m]) => `${role} r=${fmt(m!.reward)} acc=${fmt(m!.accuracy)} len=${fmt(m!.responseLength.mean, 0)} gn=${fmt(m!.gradNorm)}${m!.formatViolationRate > 0 ? ` fmt=${fmt(m!.formatViolationRate)}` : ''}`)
    .join(' | ');
  return `step ${r.step}/${total} reward ${fmt(r.reward)} ${(r.timings.stepMs / 1000).toFixed(1)}s | ${roles}`;
}

export function validationLine(v: ValidationRecord): string {
  const roles = Object.entries(v.roles)
    .filter(([, m]) => m!.accuracy !== null)
    .map(([role, m]) => `${role} ${fmt(m!.accuracy)}`)
    .join(', ');
  return `validation @${v.step}: accuracy ${fmt(v.accuracy)} on ${v.tasks} tasks${roles ? ` (${roles})` : ''}`;
}

/** The before/after table of validation accuracy, overall and per role. */
export function accuracyTable(before: ValidationRecord, after: ValidationRecord): string {
  const roles = [...new Set([...Object.keys(before.roles), ...Object.keys(after.roles)])].filter(
    (r) => before.roles[r as keyof typeof before.roles]?.accuracy != null || after.roles[r as keyof typeof after.roles]?.accuracy != null,
  );
  const rows: [string, number | null | undefined, number | null | undefined][] = [['overall (final answer)', before.accuracy, after.accuracy]];
  for (const r of roles) rows.push([r, before.roles[r as keyof typeof before.roles]?.accuracy, after.roles[r as keyof typeof after.roles]?.accuracy]);
  const w = Math.max(...rows.map((x) => x[0].length), 10);
  const lines = [`${'validation accuracy'.padEnd(w)}  step ${String(before.step).padStart(3)}  step ${String(after.step).padStart(3)}  change`];
  for (const [name, a, b] of rows) {
    const change = a != null && b != null ? `${b - a >= 0 ? '+' : ''}${((b - a) * 100).toFixed(1)} pts` : '';
    lines.push(`${name.padEnd(w)}  ${fmt(a).padStart(8)}  ${fmt(b).padStart(8)}  ${change}`);
  }
  return lines.join('\n');
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

/** Runs (or resumes) the training loop to the configured number of steps. */
export async function runTrainLoop(trainer: Trainer, o: TrainLoopOptions): Promise<TrainLoopResult> {
  // A terminal gets the live bar; otherwise lines through console.error (which callers may capture).
  const log = o.log ?? (process.stderr.isTTY ? process.stderr : { write: (t: string) => console.error(t.replace(/\n$/, '')), isTTY: false });
  const metricsPath = join(o.runDir, RUN_FILES.metrics);
  const samplesPath = join(o.runDir, RUN_FILES.samples);
  await mkdir(o.runDir, { recursive: true });
  if (o.resume) {
    const ck = await loadCheckpoint(o.runDir);
    await truncateTo(metricsPath, ck.metricsBytes);
    await truncateTo(samplesPath, ck.samplesBytes);
    await trainer.loadState(ck.state);
    log.write(`troupe train: resumed ${o.runDir} at step ${ck.state.step} (${ck.dir})\n`);
  } else if (await exists(metricsPath)) {
    throw new TrainRunError(`${o.runDir} already holds a run (${RUN_FILES.metrics}): continue it with --resume ${o.runDir}, or choose another --out`);
  }
  // Records go to the files in order; appends are awaited one after another.
  let writes = Promise.resolve();
  const append = (path: string, rec: MetricsRecord | SampleRecord) => {
    writes = writes.then(() => appendFile(path, JSON.stringify(rec) + '\n'));
  };
  const history = { before: null as ValidationRecord | null, after: null as ValidationRecord | null };
  trainer.onRecord = (r) => {
    append(metricsPath, r);
    if (r.type === 'validation') {
      history.before ??= r;
      history.after = r;
    }
  };
  trainer.onSample = (s) => append(samplesPath, s);
  if (!o.resume) {
    append(metricsPath, trainer.runRecord());
    log.write(validationLine(await trainer.validate()) + '\n');
  } else {
    // The before/after table of a resumed run still starts at its first validation.
    for (const r of parseMetricsJsonl(await readFile(metricsPath, 'utf8').catch(() => '')).records) {
      if (r.type === 'validation') {
        history.before ??= r;
        history.after = r;
      }
    }
  }
  const total = trainer.config.steps;
  const progress = new Progress({ label: 'train', total, stream: log });
  progress.tick(trainer.step, 'starting');
  try {
    while (!trainer.done && !(o.stopAfter !== undefined && trainer.step >= o.stopAfter)) {
      const rec = await trainer.trainStep();
      const line = stepLine(rec, total);
      if (log.isTTY) progress.tick(1, line.slice(0, 160));
      else {
        log.write(line + '\n');
        progress.tick(1);
      }
      const step = trainer.step;
      if (step % trainer.config.validation.every === 0 || trainer.done) {
        const v = await trainer.validate();
        log.write(validationLine(v) + '\n');
      }
      if (step % o.checkpointEvery === 0 || trainer.done || step === o.stopAfter) {
        await writes;
        await saveCheckpoint(o.runDir, await trainer.saveState());
      }
    }
  } catch (e) {
    await writes.catch(() => {});
    if (e instanceof GpuDeviceLostError) {
      throw new TrainRunError(`the GPU device was lost during step ${trainer.step + 1} (${e.message}); the run can continue from its last checkpoint: troupe train --resume ${o.runDir}`);
    }
    throw e;
  }
  progress.done();
  await writes;
  if (!trainer.done) {
    log.write(`troupe train: stopped after step ${trainer.step} of ${total}; continue with --resume ${o.runDir}\n`);
    return { runDir: o.runDir, before: history.before, after: history.after, steps: trainer.step };
  }
  await saveAdapters(o.runDir, await trainer.adapterFiles());
  await writeReport(o.runDir);
  if (history.before && history.after) log.write(accuracyTable(history.before, history.after) + '\n');
  return { runDir: o.runDir, before: history.before, after: history.after, steps: trainer.step };
}

/** RUNDIR/report.html from the run's metrics and samples. */
export async function writeReport(runDir: string): Promise<string> {
  const records = parseMetricsJsonl(await readFile(join(runDir, RUN_FILES.metrics), 'utf8')).records;
  const samples = parseSamplesJsonl(await readFile(join(runDir, RUN_FILES.samples), 'utf8').catch(() => '')).samples;
  const path = join(runDir, RUN_FILES.report);
  await atomicWriteFile(path, renderReport({ records, samples }));
  return path;
}
