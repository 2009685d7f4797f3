// The app's run settings: defaults sized for a browser tab (and the CPU driver the tests use), their
// checks, the TrainerConfig they make, and Hugging Face repo ids/URLs -> a URL base for UrlSource.
// Mirrors the CLI's small preset (src/cli/train-config.ts), which this module cannot import (node:fs).
import { LINEAR_MODULES } from '../model/adapter.ts';
import { STUDY_CONFIG, type TrainerConfig } from '../rl/trainer.ts';
import { WORKFLOW_NAMES } from '../workflows/types.ts';
import type { RunSettings } from './protocol.ts';

export const DEFAULT_SETTINGS: RunSettings = {
  workflow: 'voting',
  policy: 'isolated',
  steps: 16,
  batchTasks: 4,
  groupSize: 8,
  lr: 5e-3,
  loraRank: 8,
  loraAlpha: 16,
  maxNewTokens: 48,
  temperature: 1,
  validationEvery: 8,
  validationTasks: 64,
  seed: 0,
  dtype: 'auto',
  tuneMatmuls: false,
};

/** Problems with settings, one message each (empty: fine). */
export function checkSettings(s: RunSettings): string[] {
  const bad: string[] = [];
  const int = (k: keyof RunSettings, min: number) => {
    const v = s[k] as number;
    if (!Number.isInteger(v) || v < min) bad.push(`${k} must be an integer >= ${min}, got ${v}`);
  };
  int('steps', 1);
  int('batchTasks', 1);
  int('groupSize', 1);
  int('loraRank', 1);
  int('maxNewTokens', 1);
  int('validationEvery', 1);
  int('validationTasks', 1);
  int('seed', 0);
  if (!(s.lr > 0 && Number.isFinite(s.lr))) bad.push(`lr must be > 0, got ${s.lr}`);
  if (!(s.loraAlpha > 0 && Number.isFinite(s.loraAlpha))) bad.push(`loraAlpha must be > 0, got ${s.loraAlpha}`);
  if (!(s.temperature > 0 && Number.isFinite(s.temperature))) bad.push(`temperature must be > 0 (GRPO samples), got ${s.temperature}`);
  if (!(WORKFLOW_NAMES as readonly string[]).includes(s.workflow)) bad.push(`unknown workflow ${s.workflow}`);
  if (s.policy !== 'shared' && s.policy !== 'isolated') bad.push(`policy must be shared or isolated, got ${s.policy}`);
  return bad;
}

/** The Trainer's config for these settings: the study's algorithm, browser-sized shapes. */
export function trainerConfig(s: RunSettings, names: { taskName: string; modelName: string }): TrainerConfig {
  return {
    ...STUDY_CONFIG,
    workflow: s.workflow,
    policy: s.policy,
    taskName: names.taskName,
    modelName: names.modelName,
    steps: s.steps,
    batchTasks: s.batchTasks,
    groupSize: s.groupSize,
    sampling: { temperature: s.temperature, topP: 1, maxNewTokens: s.maxNewTokens },
    // Sampled at the training temperature, 2 rollouts a task, as the CLI's small preset validates.
    validation: { every: s.validationEvery, tasks: s.validationTasks, temperature: s.temperature, samples: 2 },
    lr: s.lr,
    warmupSteps: 0,
    lora: { rank: s.loraRank, alpha: s.loraAlpha, targets: [...LINEAR_MODULES] },
    seed: s.seed,
    update: { ...STUDY_CONFIG.update, microBatchTokens: 4096 },
    samplesPerStep: 2,
  };
}

export class ModelUrlError extends Error {
  override name = 'ModelUrlError';
}

/**
 * A model given as a Hugging Face repo id ("Qwen/Qwen3-0.6B", optionally "@revision"), a huggingface.co
 * page URL (…/Qwen/Qwen3-0.6B, …/tree/REV) or any URL of a folder -> the URL base files are read from.
 */
export function modelUrlBase(input: string): string {
  const text = input.trim();
  if (!text) throw new ModelUrlError('no model given: a Hugging Face repo id (Qwen/Qwen3-0.6B) or a URL');
  const id = /^([A-Za-z0-9][\w.-]*)\/([\w.-]+)(?:@([\w./-]+))?$/.exec(text);
  if (id) return `https://huggingface.co/${id[1]}/${id[2]}/resolve/${encodeURIComponent(id[3] ?? 'main')}/`;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ModelUrlError(`"${text}" is neither a Hugging Face repo id (owner/name) nor a URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new ModelUrlError(`${text}: only http(s) URLs can be read`);
  if (url.hostname === 'huggingface.co' || url.hostname === 'hf.co') {
    const parts = url.pathname.split('/').filter(Boolean);
    if (parts.length < 2) throw new ModelUrlError(`${text}: not a model repo URL (https://huggingface.co/OWNER/NAME)`);
    const [owner, name, kind, rev] = parts;
    const revision = (kind === 'tree' || kind === 'resolve' || kind === 'blob') && rev ? rev : 'main';
    return `https://huggingface.co/${owner}/${name}/resolve/${revision}/`;
  }
  const href = url.href.replace(/[?#].*$/, '');
  // A file URL inside the folder (…/config.json) names its folder.
  return href.endsWith('/') ? href : /\.(json|safetensors)$/.test(href) ? href.slice(0, href.lastIndexOf('/') + 1) : href + '/';
}
