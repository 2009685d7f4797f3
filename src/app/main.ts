// The troupe browser app: configure a run (model, task, workflow, policy, training sizes), train it in a
// Web Worker (worker.ts, the CLI's Trainer) with live per-role charts, step timing and a trajectory viewer,
// pause/resume/stop, export adapters (PEFT, zipped), metrics/samples JSONL and the HTML report; or import
// a past run's metrics to view it. Plain TypeScript and DOM. Body attributes data-state, data-records,
// data-samples and data-steps mirror the run for tests and scripts.
import { parseRunJsonl, toJsonl } from '../metrics/jsonl.ts';
import { beforeAfterTable, episodeHtml, REPORT_CSS, renderReport, runHeader } from '../metrics/report.ts';
import type { MetricsRecord, RunRecord, SampleRecord, StepRecord } from '../metrics/schema.ts';
import { rolesOf } from '../metrics/charts.ts';
import { UPLOT_CSS } from '../generated/uplot.ts';
import { LiveCharts } from './live-charts.ts';
import type { ExportedAdapter, FromWorker, ModelChoice, RunSettings, RunState, TaskChoice, ToWorker } from './protocol.ts';
import { checkSettings, DEFAULT_SETTINGS, modelUrlBase } from './settings.ts';
import { zipStore } from './zip.ts';

const $ = <T extends HTMLElement = HTMLElement>(id: string): T => {
  const el = document.getElementById(id);
  if (!el) throw new Error(`app: no #${id} in the page`);
  return el as T;
};

// ---- page state ----
let records: MetricsRecord[] = [];
let samples: SampleRecord[] = [];
let worker: Worker | null = null;
let state: RunState = 'idle';
let modelFiles: { path: string; file: File }[] = [];
let modelFilesLabel = 'local files';
let exportId = 0;
const pendingExports = new Map<number, { resolve: (a: ExportedAdapter[]) => void; reject: (e: Error) => void }>();
let charts: LiveCharts;
/** The page's WebGPU check: null while it runs; the reason when WebGPU cannot train here. */
let webgpuProblem: string | null | undefined;
let renderQueued = false;

// ---- helpers ----
function download(name: string, data: BlobPart, type: string): void {
  const url = URL.createObjectURL(new Blob([data], { type }));
  const a = Object.assign(document.createElement('a'), { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

function setStatus(text: string, bad = false): void {
  const el = $('status');
  el.textContent = text;
  el.classList.toggle('down', bad);
}

function log(text: string): void {
  const el = $('log');
  el.textContent = (el.textContent ? el.textContent + '\n' : '') + text;
  el.scrollTop = el.scrollHeight;
}

function fmtBytes(n: number): string {
  return n >= 2 ** 30 ? `${(n / 2 ** 30).toFixed(2)} GiB` : n >= 2 ** 20 ? `${(n / 2 ** 20).toFixed(1)} MiB` : `${(n / 1024).toFixed(0)} KiB`;
}

function fmtMs(ms: number): string {
  return ms >= 60_000 ? `${(ms / 60_000).toFixed(1)} min` : ms >= 1000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms)} ms`;
}

/** The base URL of files shipped beside the app (public/): the demo model. */
function appBase(): string {
  const base = (import.meta as unknown as { env?: { BASE_URL?: string } }).env?.BASE_URL ?? './';
  return new URL(base, document.baseURI).href;
}

// ---- WebGPU check (the page's own; the worker checks its navigator.gpu too) ----
async function checkWebGpu(): Promise<boolean> {
  const pill = $('gpu-status');
  const banner = $('webgpu-message');
  const fail = (short: string, long: string) => {
    pill.textContent = short;
    pill.className = 'pill bad';
    banner.textContent = long + ' You can still view a past run: import its metrics.jsonl.';
    banner.hidden = false;
    webgpuProblem = long;
    return false;
  };
  if (!window.isSecureContext) return fail('no WebGPU (insecure page)', 'WebGPU needs a secure context: open this page over https:// or from http://localhost.');
  if (!('gpu' in navigator) || !navigator.gpu) {
    return fail('no WebGPU', 'This browser has no WebGPU (navigator.gpu is missing). Use a current Chrome or Edge (113+), or enable WebGPU in your browser\'s settings/flags.');
  }
  let adapter: GPUAdapter | null = null;
  try {
    adapter = await navigator.gpu.requestAdapter({ powerPreference: 'high-performance' });
  } catch (e) {
    return fail('no WebGPU adapter', `WebGPU is present but requesting an adapter failed: ${(e as Error).message}.`);
  }
  if (!adapter) return fail('no WebGPU adapter', 'WebGPU is present but the browser gave no adapter (the GPU may be blocklisted or WebGPU disabled; see chrome://gpu).');
  const info = adapter.info;
  const lim = adapter.limits;
  const features = ['shader-f16', 'subgroups', 'timestamp-query'].filter((f) => adapter.features.has(f));
  const what = [info?.vendor, info?.architecture, info?.description].filter(Boolean).join(' ') || 'WebGPU adapter';
  pill.textContent = `WebGPU: ${what}`;
  pill.className = 'pill ok';
  pill.title = `features: ${features.join(', ') || 'none'}; maxStorageBufferBindingSize ${fmtBytes(lim.maxStorageBufferBindingSize)}; maxBufferSize ${fmtBytes(lim.maxBufferSize)}`;
  const notes: string[] = [];
  if (lim.maxStorageBufferBindingSize < 128 * 2 ** 20) notes.push(`its storage buffers are limited to ${fmtBytes(lim.maxStorageBufferBindingSize)}: only small models (the demo) fit`);
  if (!adapter.features.has('shader-f16')) notes.push('no shader-f16: weights are stored as f32 (twice the memory)');
  if (notes.length) log(`WebGPU: ${notes.join('; ')}`);
  return true;
}

// ---- form ----
const NUMBER_FIELDS: [keyof RunSettings, string][] = [
  ['steps', 'steps'],
  ['batchTasks', 'batch-tasks'],
  ['groupSize', 'group-size'],
  ['lr', 'lr'],
  ['loraRank', 'lora-rank'],
  ['loraAlpha', 'lora-alpha'],
  ['maxNewTokens', 'max-new-tokens'],
  ['temperature', 'temperature'],
  ['validationEvery', 'validation-every'],
  ['validationTasks', 'validation-tasks'],
  ['seed', 'seed'],
];

function fillForm(s: RunSettings): void {
  for (const [k, id] of NUMBER_FIELDS) $<HTMLInputElement>(id).value = String(s[k]);
  $<HTMLSelectElement>('workflow').value = s.workflow;
  $<HTMLSelectElement>('policy').value = s.policy;
  $<HTMLSelectElement>('dtype').value = s.dtype;
  $<HTMLInputElement>('tune-matmuls').checked = s.tuneMatmuls;
}

function readSettings(): RunSettings {
  const s = { ...DEFAULT_SETTINGS } as RunSettings;
  for (const [k, id] of NUMBER_FIELDS) (s as unknown as Record<string, number>)[k] = Number($<HTMLInputElement>(id).value);
  s.workflow = $<HTMLSelectElement>('workflow').value as RunSettings['workflow'];
  s.policy = $<HTMLSelectElement>('policy').value as RunSettings['policy'];
  s.dtype = $<HTMLSelectElement>('dtype').value as RunSettings['dtype'];
  s.tuneMatmuls = $<HTMLInputElement>('tune-matmuls').checked;
  return s;
}

function modelKind(): string {
  return document.querySelector<HTMLInputElement>('input[name="model-kind"]:checked')?.value ?? 'demo';
}

function syncForm(): void {
  const kind = modelKind();
  for (const el of document.querySelectorAll<HTMLElement>('.sub[data-for]')) {
    const f = el.dataset.for;
    el.hidden = f === 'task-file' ? $<HTMLSelectElement>('task').value !== 'file' : f !== kind;
  }
}

function modelChoice(): ModelChoice {
  const kind = modelKind();
  if (kind === 'demo') return { kind: 'url', url: new URL('demo-model/', appBase()).href, label: 'demo-model', opfs: false };
  if (kind === 'hf') {
    const input = $<HTMLInputElement>('hf-repo').value;
    const url = modelUrlBase(input);
    return { kind: 'url', url, label: input.trim(), opfs: $<HTMLInputElement>('hf-opfs').checked };
  }
  if (!modelFiles.length) throw new Error('choose a model folder (config.json, *.safetensors, tokenizer files), or drop one on the page');
  return { kind: 'files', files: modelFiles, label: modelFilesLabel };
}

function taskChoice(): TaskChoice {
  const v = $<HTMLSelectElement>('task').value;
  if (v === 'file') {
    const file = $<HTMLInputElement>('task-file').files?.[0];
    if (!file) throw new Error('choose a dataset file (JSONL or Parquet) for the task');
    return { kind: 'file', file, taskKind: $<HTMLSelectElement>('task-file-kind').value as 'math' | 'code' };
  }
  return { kind: 'builtin', name: v as 'demo' | 'math' | 'code' };
}

/** Model files from a folder input: paths relative to the picked folder. */
function setModelFiles(files: { path: string; file: File }[], label: string): void {
  // Strip a common top folder (webkitRelativePath and dropped folders start with it).
  const tops = new Set(files.map((f) => (f.path.includes('/') ? f.path.slice(0, f.path.indexOf('/')) : '')));
  const strip = tops.size === 1 && !tops.has('') ? [...tops][0]! + '/' : '';
  modelFiles = files.filter((f) => !/(^|\/)\./.test(f.path)).map((f) => ({ path: f.path.slice(strip.length), file: f.file }));
  modelFilesLabel = label || strip.replace(/\/$/, '') || 'local files';
  const total = modelFiles.reduce((a, f) => a + f.file.size, 0);
  const hasConfig = modelFiles.some((f) => f.path === 'config.json' || f.path.endsWith('/config.json'));
  $('model-files-label').textContent = `${modelFilesLabel}: ${modelFiles.length} files, ${fmtBytes(total)}${hasConfig ? '' : ' (no config.json!)'}`;
  document.querySelector<HTMLInputElement>('input[name="model-kind"][value="files"]')!.checked = true;
  syncForm();
}

async function entryFiles(entry: FileSystemEntry, prefix: string, out: { path: string; file: File }[]): Promise<void> {
  if (entry.isFile) {
    const file = await new Promise<File>((res, rej) => (entry as FileSystemFileEntry).file(res, rej));
    out.push({ path: prefix + entry.name, file });
  } else if (entry.isDirectory) {
    const reader = (entry as FileSystemDirectoryEntry).createReader();
    for (;;) {
      const batch = await new Promise<FileSystemEntry[]>((res, rej) => reader.readEntries(res, rej));
      if (!batch.length) break;
      for (const e of batch) await entryFiles(e, `${prefix}${entry.name}/`, out);
    }
  }
}

async function droppedFiles(dt: DataTransfer): Promise<{ path: string; file: File }[]> {
  const out: { path: string; file: File }[] = [];
  const entries = [...dt.items].map((i) => i.webkitGetAsEntry?.()).filter((e): e is FileSystemEntry => !!e);
  if (entries.length) for (const e of entries) await entryFiles(e, '', out);
  else for (const f of dt.files) out.push({ path: f.name, file: f });
  return out;
}

// ---- run control ----
function setState(s: RunState, message?: string): void {
  state = s;
  const pill = $('state');
  pill.textContent = s;
  pill.dataset.state = s;
  document.body.dataset.state = s;
  if (message) setStatus(message, s === 'error');
  const active = s === 'loading' || s === 'running' || s === 'pausing' || s === 'paused' || s === 'stopping';
  $<HTMLButtonElement>('start').disabled = active;
  const pause = $<HTMLButtonElement>('pause');
  pause.disabled = !(s === 'running' || s === 'paused' || s === 'pausing');
  pause.textContent = s === 'paused' || s === 'pausing' ? 'Resume' : 'Pause';
  $<HTMLButtonElement>('stop').disabled = !active;
  $<HTMLButtonElement>('export-adapters').disabled = !worker || !records.some((r) => r.type === 'run') || s === 'loading' || s === 'error';
  if (s !== 'loading') $('progress-box').hidden = true;
}

function send(m: ToWorker): void {
  worker?.postMessage(m);
}

function onWorkerMessage(m: FromWorker): void {
  switch (m.type) {
    case 'state':
      setState(m.state, m.message);
      return;
    case 'progress': {
      $('progress-box').hidden = false;
      document.body.dataset.progress = String(Number(document.body.dataset.progress ?? 0) + 1);
      const p = $<HTMLProgressElement>('progress');
      p.max = m.total || 1;
      p.value = m.done;
      $('progress-text').textContent = `${m.label} · ${m.unit === 'bytes' ? `${fmtBytes(m.done)} of ${fmtBytes(m.total)}` : `${m.done} of ${m.total}`}`;
      return;
    }
    case 'gpu':
      log(`training on ${m.info.runtime} WebGPU: ${m.info.adapter || 'adapter'}${m.info.cpuDriver ? ` (CPU driver ${m.info.cpuDriver}: slow)` : ''}; features: ${m.info.features.join(', ') || 'none'}`);
      return;
    case 'record':
      records.push(m.record);
      scheduleRender();
      return;
    case 'sample':
      samples.push(m.sample);
      scheduleRender();
      return;
    case 'adapters': {
      const p = pendingExports.get(m.id);
      pendingExports.delete(m.id);
      p?.resolve(m.adapters);
      return;
    }
    case 'log':
      log(m.message);
      return;
    case 'error': {
      if (m.id !== undefined) {
        const p = pendingExports.get(m.id);
        pendingExports.delete(m.id);
        p?.reject(new Error(m.message));
        return;
      }
      setStatus(m.message, true);
      log(`error: ${m.message}`);
      return;
    }
  }
}

function startRun(): void {
  if (webgpuProblem) {
    setStatus(`cannot train here: ${webgpuProblem}`, true);
    return;
  }
  let model: ModelChoice;
  let task: TaskChoice;
  const settings = readSettings();
  try {
    const bad = checkSettings(settings);
    if (bad.length) throw new Error(bad.join('; '));
    model = modelChoice();
    task = taskChoice();
  } catch (e) {
    setStatus((e as Error).message, true);
    return;
  }
  worker?.terminate();
  for (const p of pendingExports.values()) p.reject(new Error('a new run started'));
  pendingExports.clear();
  resetView();
  $('log').textContent = '';
  const w = new Worker(new URL('./worker.ts', import.meta.url), { type: 'module', name: 'troupe-trainer' });
  worker = w;
  w.onmessage = (ev: MessageEvent<FromWorker>) => {
    if (worker === w) onWorkerMessage(ev.data);
  };
  w.onerror = (ev) => {
    ev.preventDefault();
    if (worker !== w) return;
    setState('error', `the training worker failed: ${ev.message || 'could not load (see the console)'}`);
  };
  setState('loading', 'starting the training worker');
  send({ type: 'start', model, task, settings });
}

async function exportAdapters(): Promise<void> {
  if (!worker) return;
  const id = ++exportId;
  const got = new Promise<ExportedAdapter[]>((resolve, reject) => pendingExports.set(id, { resolve, reject }));
  setStatus(state === 'running' ? 'exporting adapters after the current step…' : 'exporting adapters…');
  send({ type: 'export', id });
  try {
    const adapters = await got;
    const entries = adapters.flatMap((a) => Object.entries(a.files).map(([f, data]) => ({ name: `${a.name}/${f}`, data })));
    const run = records.find((r): r is RunRecord => r.type === 'run');
    const readme = `troupe adapters (PEFT LoRA), one folder per adapter.\nworkflow ${run?.workflow} · policy ${run?.policy} · task ${run?.task} · model ${run?.model}\nroles -> adapters: ${JSON.stringify(run?.adapters ?? {})}\nsteps: ${records.filter((r) => r.type === 'step').length}\n`;
    download('troupe-adapters.zip', zipStore([...entries, { name: 'README.txt', data: readme }]) as BlobPart, 'application/zip');
    setStatus(`exported ${adapters.length} adapter(s): ${adapters.map((a) => a.name).join(', ')}`);
  } catch (e) {
    setStatus(`export failed: ${(e as Error).message}`, true);
  }
}

// ---- view ----
function resetView(): void {
  records = [];
  samples = [];
  charts.clear();
  render();
}

function scheduleRender(): void {
  if (renderQueued) return;
  renderQueued = true;
  requestAnimationFrame(() => {
    renderQueued = false;
    render();
  });
}

function stepTiming(steps: StepRecord[], run: RunRecord | undefined): string {
  const last = steps.at(-1);
  if (!last) return '';
  const t = last.timings;
  const mean = steps.reduce((a, s) => a + s.timings.stepMs, 0) / steps.length;
  const total = Number((run?.config as { steps?: number } | undefined)?.steps ?? 0);
  const left = total > last.step && state !== 'done' ? ` · about ${fmtMs(mean * (total - last.step))} left` : '';
  return (
    `step ${last.step}${total ? ` of ${total}` : ''}: ${fmtMs(t.stepMs)} (rollout ${fmtMs(t.rolloutMs)}, reward ${fmtMs(t.rewardMs)}, update ${fmtMs(t.updateMs)})` +
    ` · mean ${fmtMs(mean)} a step${left} · reward ${last.reward.toFixed(3)} · memory ${fmtBytes(last.memory.liveBytes)} live, ${fmtBytes(last.memory.peakBytes)} peak`
  );
}

function fillSelect(sel: HTMLSelectElement, fixed: [string, string][], values: [string, string][]): void {
  const cur = sel.value;
  const want = [...fixed, ...values];
  const have = [...sel.options].map((o) => `${o.value}\t${o.text}`).join('\n');
  if (have === want.map(([v, t]) => `${v}\t${t}`).join('\n')) return;
  sel.replaceChildren(...want.map(([v, t]) => new Option(t, v)));
  sel.value = want.some(([v]) => v === cur) ? cur : want[0]![0];
}

function renderTrajectories(): void {
  const box = $('trajectories');
  const roleSel = $<HTMLSelectElement>('traj-role');
  const stepSel = $<HTMLSelectElement>('traj-step');
  const roles = rolesOf(samples.map((s) => ({ roles: Object.fromEntries(s.turns.map((t) => [t.role, 1])) })));
  fillSelect(roleSel, [['', 'all roles']], roles.map((r) => [r, r]));
  const steps = [...new Set(samples.map((s) => s.step))].sort((a, b) => b - a);
  fillSelect(stepSel, [['', 'latest'], ['all', 'all steps']], steps.map((s) => [String(s), `step ${s}`]));
  if (!samples.length) {
    box.className = 'muted';
    box.textContent = 'no samples yet';
    return;
  }
  const role = roleSel.value;
  const split = $<HTMLSelectElement>('traj-split').value;
  const onlyViolations = $<HTMLInputElement>('traj-violations').checked;
  let list = samples.filter((s) => (!split || s.split === split) && (!role || s.turns.some((t) => t.role === role)) && (!onlyViolations || s.turns.some((t) => t.violation)));
  if (stepSel.value === '') {
    const latest = Math.max(...list.map((s) => s.step));
    list = list.filter((s) => s.step === latest);
  } else if (stepSel.value !== 'all') list = list.filter((s) => String(s.step) === stepSel.value);
  list = [...list].sort((a, b) => b.step - a.step || (a.split < b.split ? 1 : -1) || a.episode - b.episode).slice(0, 24);
  box.className = '';
  box.innerHTML = list.length ? list.map(episodeHtml).join('') : '<p class="muted">no episode matches the filter</p>';
  if (role) for (const t of box.querySelectorAll<HTMLElement>('.turn[data-role]')) t.classList.toggle('hide-role', t.dataset.role !== role);
  box.dataset.episodes = String(list.length);
}

function render(): void {
  const run = records.find((r): r is RunRecord => r.type === 'run');
  const steps = records.filter((r): r is StepRecord => r.type === 'step').sort((a, b) => a.step - b.step);
  const hasValidation = records.some((r) => r.type === 'validation');
  $('run-header').innerHTML = run ? runHeader(run, steps, false) : '<span class="muted">no run yet</span>';
  $('step-timing').textContent = stepTiming(steps, run);
  $('before-after').innerHTML = hasValidation ? beforeAfterTable(records) : '<span class="muted">no validation yet</span>';
  charts.update(records);
  renderTrajectories();
  document.body.dataset.records = String(records.length);
  document.body.dataset.samples = String(samples.length);
  document.body.dataset.steps = String(steps.length);
  const any = records.length > 0;
  $<HTMLButtonElement>('export-metrics').disabled = !any;
  $<HTMLButtonElement>('export-report').disabled = !any;
  $<HTMLButtonElement>('export-samples').disabled = !samples.length;
  setState(state);
}

// ---- import ----
async function importFiles(files: File[]): Promise<void> {
  if (state === 'loading' || state === 'running' || state === 'pausing' || state === 'paused' || state === 'stopping') {
    setStatus('a run is in progress: stop it before viewing another one', true);
    return;
  }
  let recs: MetricsRecord[] = [];
  let samps: SampleRecord[] = [];
  let bad = 0;
  for (const f of files) {
    const parsed = parseRunJsonl(await f.text());
    recs = recs.concat(parsed.records);
    samps = samps.concat(parsed.samples);
    bad += parsed.bad;
  }
  if (!recs.length && !samps.length) {
    setStatus(`no troupe records in ${files.map((f) => f.name).join(', ')} (${bad} unreadable lines)`, true);
    return;
  }
  worker?.terminate();
  worker = null;
  // Samples alone join the metrics on view; metrics replace the run.
  const keepRecords = !recs.length ? records : recs;
  charts.clear();
  records = keepRecords;
  samples = samps.length || recs.length ? samps : samples;
  state = 'idle';
  render();
  setState('idle', `viewing ${files.map((f) => f.name).join(', ')}: ${recs.length} records, ${samps.length} samples${bad ? `, ${bad} unreadable line${bad === 1 ? '' : 's'} skipped` : ''}`);
}

// ---- wiring ----
function init(): void {
  const style = document.createElement('style');
  style.textContent = UPLOT_CSS + REPORT_CSS;
  document.head.prepend(style);
  charts = new LiveCharts($('charts'));
  fillForm(DEFAULT_SETTINGS);
  syncForm();
  for (const r of document.querySelectorAll('input[name="model-kind"]')) r.addEventListener('change', syncForm);
  $('task').addEventListener('change', () => {
    syncForm();
    // The demo model only knows the demo task; a real model the rest.
    if ($<HTMLSelectElement>('task').value !== 'demo' && modelKind() === 'demo') log('note: the demo model is trained for the demo task; other tasks need a real Qwen3 model');
  });
  $('run-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    startRun();
  });
  $('pause').addEventListener('click', () => send({ type: state === 'paused' || state === 'pausing' ? 'resume' : 'pause' }));
  $('stop').addEventListener('click', () => send({ type: 'stop' }));
  $('export-adapters').addEventListener('click', () => void exportAdapters());
  $('export-metrics').addEventListener('click', () => download('metrics.jsonl', toJsonl(records), 'application/x-ndjson'));
  $('export-samples').addEventListener('click', () => download('samples.jsonl', toJsonl(samples), 'application/x-ndjson'));
  $('export-report').addEventListener('click', () => download('report.html', renderReport({ records, samples }), 'text/html'));
  $('import-file').addEventListener('change', (ev) => {
    const input = ev.target as HTMLInputElement;
    const files = [...(input.files ?? [])];
    input.value = '';
    if (files.length) void importFiles(files);
  });
  $('model-dir').addEventListener('change', (ev) => {
    const input = ev.target as HTMLInputElement;
    setModelFiles([...(input.files ?? [])].map((f) => ({ path: f.webkitRelativePath || f.name, file: f })), '');
  });
  for (const id of ['traj-role', 'traj-split', 'traj-step', 'traj-violations']) $(id).addEventListener('change', renderTrajectories);
  // Drag and drop anywhere: JSONL files are a run to view, anything else a model folder.
  document.addEventListener('dragover', (ev) => {
    ev.preventDefault();
    document.body.classList.add('drag-over');
  });
  document.addEventListener('dragleave', (ev) => {
    if (!ev.relatedTarget) document.body.classList.remove('drag-over');
  });
  document.addEventListener('drop', (ev) => {
    ev.preventDefault();
    document.body.classList.remove('drag-over');
    if (!ev.dataTransfer) return;
    void droppedFiles(ev.dataTransfer).then((files) => {
      if (!files.length) return;
      if (files.every((f) => /\.(jsonl|ndjson)$/i.test(f.path))) void importFiles(files.map((f) => f.file));
      else setModelFiles(files, '');
    });
  });
  render();
  setState('idle');
  void checkWebGpu().then((ok) => {
    if (ok) webgpuProblem = null;
    document.body.dataset.webgpu = ok ? 'yes' : 'no';
  });
}

init();
