// The app's training worker: the same Trainer the CLI runs (src/rl/trainer.ts), in a dedicated Web Worker
// so the page stays responsive. Protocol in protocol.ts: 'start' loads the GPU, model, tokenizer and
// tasks, then validates, trains step by step (validating every K steps and after the last) and streams
// every record and sample back; pause/stop act between steps; 'export' answers with the PEFT files.
// One run per worker: the page starts a fresh worker for the next run.
import { Gpu } from '../gpu/gpu.ts';
import { tuneMatmuls } from '../kernels/matmul-tune.ts';
import { applyStoredTuning, saveTuning } from '../kernels/matmul-tune-store.ts';
import { fasterThanHeuristic, setMatmulTuning } from '../kernels/matmul-tuning.ts';
import type { Qwen3Config } from '../model/config.ts';
import { Qwen3Model } from '../model/qwen3.ts';
import { FilesSource, UrlSource, type FileSource } from '../model/source.ts';
import { Qwen3Tokenizer } from '../model/tokenizer.ts';
import { DEFAULT_TUNE_ROWS, modelTuneShapes } from '../model/tune-shapes.ts';
import { loadQwen3 } from '../model/weights.ts';
import { Trainer } from '../rl/trainer.ts';
import { builtinTasks } from '../tasks/builtin/index.ts';
import { loadTasks, type TaskSet } from '../tasks/source.ts';
import type { Task } from '../tasks/types.ts';
import type { FromWorker, ModelChoice, RunState, TaskChoice, ToWorker } from './protocol.ts';
import { trainerConfig } from './settings.ts';

const scope = self as unknown as { postMessage(m: FromWorker, transfer?: Transferable[]): void; onmessage: ((ev: MessageEvent<ToWorker>) => void) | null };
const post = (m: FromWorker, transfer: Transferable[] = []) => scope.postMessage(m, transfer);

let state: RunState = 'idle';
const control = { pause: false, stop: false };
let wake: (() => void) | null = null;
let trainer: Trainer | null = null;
/** Trainer calls run one at a time: an export waits for the step in flight. */
let chain: Promise<unknown> = Promise.resolve();

function exclusive<T>(fn: () => Promise<T>): Promise<T> {
  const p = chain.then(fn);
  chain = p.catch(() => {});
  return p;
}

function setState(s: RunState, message?: string): void {
  state = s;
  post({ type: 'state', state: s, message });
}

function errorText(e: unknown): string {
  if (e instanceof Error) return `${e.name === 'Error' ? '' : e.name + ': '}${e.message}`;
  return String(e);
}

/** A fetch that reports the bytes of whole-file downloads (the OPFS cache fill) as they stream. */
function countingFetch(label: string): typeof fetch {
  return async (input, init) => {
    const res = await fetch(input, init);
    const headers = new Headers(init?.headers);
    const total = Number(res.headers.get('content-length') ?? 0);
    if ((init?.method ?? 'GET') !== 'GET' || headers.has('Range') || res.status !== 200 || !res.body || total < 1 << 20) return res;
    const name = String(input instanceof Request ? input.url : input).split('/').pop() ?? 'file';
    let done = 0;
    let last = 0;
    const counter = new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, ctl) {
        done += chunk.byteLength;
        const t = Date.now();
        if (t - last > 200 || done === total) {
          last = t;
          post({ type: 'progress', label: `${label}: downloading ${decodeURIComponent(name)}`, done, total, unit: 'bytes' });
        }
        ctl.enqueue(chunk);
      },
    });
    return new Response(res.body.pipeThrough(counter), { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}

function modelSource(m: ModelChoice): FileSource {
  if (m.kind === 'url') return new UrlSource(m.url, { opfs: m.opfs, fetch: countingFetch(m.label) });
  return new FilesSource(
    m.files.map((f) => [f.path, f.file] as const),
    m.label,
  );
}

async function taskSet(t: TaskChoice, seed: number): Promise<TaskSet> {
  if (t.kind === 'file') return loadTasks({ kind: t.taskKind, dataset: t.file, seed });
  const tasks: Task[] = t.name === 'demo' ? builtinTasks({ kind: 'math', builtin: 'demo', seed }) : builtinTasks({ kind: t.name, seed });
  return {
    train: tasks.filter((x) => x.split === 'train'),
    validation: tasks.filter((x) => x.split === 'validation'),
    description: `built-in ${t.name} tasks (seed ${seed})`,
  };
}

function taskName(t: TaskChoice): string {
  return t.kind === 'builtin' ? t.name : `${t.taskKind}:${t.file.name}`;
}

/** A browser run's batches: up to 2048 rows (troupe tune's default goes on to a training step's 8192). */
const BROWSER_TUNE_ROWS = DEFAULT_TUNE_ROWS.filter((r) => r <= 2048);

/** This GPU's stored matmul table, or (when asked) a new one for the model's products, saved for later runs. */
async function useTunedMatmuls(gpu: Gpu, config: Qwen3Config, weights: 'f16' | 'f32', tune: boolean): Promise<void> {
  const stored = await applyStoredTuning(gpu);
  if (stored) {
    post({ type: 'log', message: stored.note });
    return;
  }
  if (!tune) return;
  setState('loading', 'tuning matmuls for this GPU');
  const shapes = modelTuneShapes(config, weights, BROWSER_TUNE_ROWS);
  const table = await tuneMatmuls(gpu, shapes, { onShape: (_e, done, total) => post({ type: 'progress', label: 'tuning matmuls', done, total, unit: 'items' }) });
  const where = await saveTuning(gpu, table);
  setMatmulTuning(gpu, table);
  post({ type: 'log', message: `matmul: ${table.entries.length} products tuned, ${fasterThanHeuristic(table.entries)} more than 3% faster than the heuristic's choice; kept in ${where}` });
}

async function waitWhilePaused(): Promise<void> {
  while (control.pause && !control.stop) await new Promise<void>((r) => (wake = r));
  wake = null;
}

async function start(m: Extract<ToWorker, { type: 'start' }>): Promise<void> {
  setState('loading', 'starting WebGPU');
  if (typeof navigator === 'undefined' || !navigator.gpu) throw new Error('this browser has no WebGPU in workers (navigator.gpu is missing): use Chrome/Edge 113+ or another WebGPU-enabled browser');
  const gpu = await Gpu.create();
  const r = gpu.report;
  post({ type: 'gpu', info: { runtime: r.runtime, adapter: [r.vendor, r.architecture, r.description].filter(Boolean).join(' '), cpuDriver: r.cpuDriver, features: [...r.features] } });
  const s = m.settings;
  setState('loading', `loading ${m.model.label}`);
  const source = modelSource(m.model);
  let lastProgress = 0;
  const { config, weights } = await loadQwen3(gpu, source, {
    dtype: s.dtype === 'auto' ? undefined : s.dtype,
    onProgress: (done, total, tensor) => {
      const t = Date.now();
      if (t - lastProgress > 100 || done === total) {
        lastProgress = t;
        post({ type: 'progress', label: `${m.model.label}: ${tensor}`, done, total, unit: 'bytes' });
      }
    },
  });
  const model = new Qwen3Model(gpu, config, weights);
  await useTunedMatmuls(gpu, config, s.dtype === 'auto' ? (gpu.f16 ? 'f16' : 'f32') : s.dtype, s.tuneMatmuls);
  setState('loading', 'loading the tokenizer');
  const tokenizer = await Qwen3Tokenizer.load(source);
  setState('loading', 'preparing tasks');
  const tasks = await taskSet(m.task, s.seed);
  post({ type: 'log', message: `${tasks.description}: ${tasks.train.length} train, ${tasks.validation.length} validation tasks` });
  const t = new Trainer({
    gpu,
    model,
    tokenizer,
    tasks,
    config: trainerConfig(s, { taskName: taskName(m.task), modelName: m.model.label }),
    onRecord: (record) => post({ type: 'record', record }),
    onSample: (sample) => post({ type: 'sample', sample }),
  });
  trainer = t;
  post({ type: 'record', record: t.runRecord() });
  if (control.stop) {
    setState('done', 'stopped before training');
    return;
  }
  setState(control.pause ? 'pausing' : 'running', 'validating (before training)');
  await exclusive(() => t.validate());
  while (!t.done && !control.stop) {
    if (control.pause) {
      setState('paused');
      await waitWhilePaused();
      if (control.stop) break;
    }
    setState('running', `step ${t.step + 1} of ${t.config.steps}`);
    await exclusive(() => t.trainStep());
    if (t.step % t.config.validation.every === 0 || t.done) {
      setState(control.stop ? 'stopping' : 'running', `validating at step ${t.step}`);
      await exclusive(() => t.validate());
    }
  }
  setState('done', control.stop ? `stopped after step ${t.step}` : `finished ${t.step} steps`);
}

async function exportAdapters(id: number): Promise<void> {
  const t = trainer;
  if (!t) {
    post({ type: 'error', id, message: 'no adapters yet: start a run first' });
    return;
  }
  try {
    const list = await exclusive(() => t.adapterFiles());
    const adapters = list.map(({ name, files }) => ({ name, files: { ...files } as Record<string, Uint8Array> }));
    post({ type: 'adapters', id, adapters });
  } catch (e) {
    post({ type: 'error', id, message: `export: ${errorText(e)}` });
  }
}

scope.onmessage = (ev) => {
  const m = ev.data;
  switch (m.type) {
    case 'start':
      if (state !== 'idle') {
        post({ type: 'error', message: 'this worker already ran a training: start a new worker' });
        return;
      }
      start(m).catch((e: unknown) => {
        console.error(e);
        post({ type: 'error', message: errorText(e) });
        setState('error', errorText(e));
      });
      return;
    case 'pause':
      if (state === 'running' || state === 'loading') {
        control.pause = true;
        setState('pausing', 'pausing after the current step');
      }
      return;
    case 'resume':
      control.pause = false;
      wake?.();
      return;
    case 'stop':
      control.stop = true;
      if (state === 'loading' || state === 'running' || state === 'pausing' || state === 'paused') setState('stopping', state === 'loading' ? 'stopping once loaded' : 'stopping after the current step');
      wake?.();
      return;
    case 'export':
      void exportAdapters(m.id);
      return;
  }
};
