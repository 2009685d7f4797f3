// The browser app's worker protocol: the page (main.ts) sends commands, the training worker (worker.ts)
// streams back state, load progress, metrics records and samples. Everything crosses as structured clone
// (File objects included: the worker reads picked model files and datasets itself).
import type { MetricsRecord, PolicySharing, SampleRecord } from '../metrics/schema.ts';
import type { TaskKind } from '../tasks/types.ts';
import type { WorkflowName } from '../workflows/types.ts';

/** Where the model comes from. */
export type ModelChoice =
  /** A URL base holding config.json, safetensors and (optionally) tokenizer files: the demo model, a Hugging
   * Face repo's resolve/main/ URL. opfs: cache whole files in the Origin Private File System. */
  | { kind: 'url'; url: string; label: string; opfs: boolean }
  /** Picked or dropped files, with their paths relative to the model folder. */
  | { kind: 'files'; files: { path: string; file: File }[]; label: string };

/** Where the tasks come from. */
export type TaskChoice =
  /** Built-in generators: 'demo' (sums for the demo model), 'math', 'code'. */
  | { kind: 'builtin'; name: 'demo' | 'math' | 'code' }
  /** A JSONL or Parquet dataset of math or code tasks. */
  | { kind: 'file'; file: File; taskKind: TaskKind };

/** What the form configures (src/app/settings.ts turns it into a TrainerConfig). */
export interface RunSettings {
  workflow: WorkflowName;
  policy: PolicySharing;
  steps: number;
  /** Tasks per step (B) and rollouts per task (G). */
  batchTasks: number;
  groupSize: number;
  lr: number;
  loraRank: number;
  loraAlpha: number;
  maxNewTokens: number;
  temperature: number;
  /** Validate before the first step, every K steps and after the last. */
  validationEvery: number;
  validationTasks: number;
  seed: number;
  /** Weights storage: 'auto' is f16 when the device has shader-f16. */
  dtype: 'auto' | 'f16' | 'f32';
  /** Where this GPU has no tuned matmul table yet, make one for the model before training (troupe tune's work,
   * kept in the browser's OPFS for later runs). A stored table is used either way. */
  tuneMatmuls: boolean;
}

export type ToWorker =
  | { type: 'start'; model: ModelChoice; task: TaskChoice; settings: RunSettings }
  /** Pause after the current step (a step is not interruptible). */
  | { type: 'pause' }
  | { type: 'resume' }
  /** Stop after the current step; the adapters stay exportable. */
  | { type: 'stop' }
  /** The adapters as PEFT files, answered with 'adapters' carrying the same id. */
  | { type: 'export'; id: number };

export type RunState = 'idle' | 'loading' | 'running' | 'pausing' | 'paused' | 'stopping' | 'done' | 'error';

export interface ExportedAdapter {
  name: string;
  /** File name -> bytes (adapter_config.json, adapter_model.safetensors). */
  files: Record<string, Uint8Array>;
}

export interface GpuInfo {
  runtime: string;
  adapter: string;
  cpuDriver: string | null;
  features: string[];
}

export type FromWorker =
  | { type: 'state'; state: RunState; message?: string }
  /** Loading progress (model bytes, tasks): done of total in `unit`. */
  | { type: 'progress'; label: string; done: number; total: number; unit: 'bytes' | 'items' }
  | { type: 'gpu'; info: GpuInfo }
  | { type: 'record'; record: MetricsRecord }
  | { type: 'sample'; sample: SampleRecord }
  | { type: 'adapters'; id: number; adapters: ExportedAdapter[] }
  | { type: 'log'; message: string }
  | { type: 'error'; message: string; id?: number };
