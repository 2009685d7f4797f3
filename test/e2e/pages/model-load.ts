// Page module for browser-model.test.ts: loads a fixture model onto the browser's WebGPU from a URL (HTTP
// Range requests, or through the OPFS cache) or from the File objects of a directory <input>, and
// tokenizes with the shipped Qwen3 tokenizer; returns sample tensors and ids for the test to check.
import { Gpu } from '../../../src/gpu/gpu.ts';
import { FilesSource, UrlSource, type FileSource } from '../../../src/model/source.ts';
import { Qwen3Tokenizer } from '../../../src/model/tokenizer.ts';
import { loadQwen3, releaseQwen3Weights, weightTensors } from '../../../src/model/weights.ts';

export type ModelPageArgs =
  | { kind: 'url'; base: string; opfs: boolean; tensors: string[] }
  | { kind: 'files'; input: string; tensors: string[] }
  | { kind: 'directory-handle'; base: string; files: string[]; tensors: string[] }
  | { kind: 'tokenizer'; texts: string[]; chat: { role: string; content: string }[] };

export interface ModelPageResult {
  runtime: string;
  tensors?: Record<string, { dtype: string; shape: number[]; values: number[] }>;
  numLayers?: number;
  progressCalls?: number;
  opfsFiles?: number;
  ids?: number[][];
  chatText?: string;
  chatIds?: number[];
}

async function opfsCount(): Promise<number> {
  const root = await navigator.storage.getDirectory();
  const dir = await root.getDirectoryHandle('troupe-cache', { create: true });
  let n = 0;
  for await (const _ of (dir as unknown as { keys(): AsyncIterable<string> }).keys()) n++;
  return n;
}

export default async function run(args: ModelPageArgs): Promise<ModelPageResult> {
  if (args.kind === 'tokenizer') {
    const tok = await Qwen3Tokenizer.load();
    return {
      runtime: 'browser',
      ids: args.texts.map((t) => tok.encode(t)),
      chatText: tok.renderChat(args.chat),
      chatIds: tok.encodeChat(args.chat),
    };
  }
  let source: FileSource;
  if (args.kind === 'url') {
    source = new UrlSource(new URL(args.base, location.href).href, { opfs: args.opfs });
  } else if (args.kind === 'directory-handle') {
    // A directory handle as showDirectoryPicker gives one: an OPFS folder filled with the model's files.
    const root = await navigator.storage.getDirectory();
    const dir = await root.getDirectoryHandle('picked-model', { create: true });
    for (const f of args.files) {
      const parts = f.split('/');
      let d = dir;
      for (const p of parts.slice(0, -1)) d = await d.getDirectoryHandle(p, { create: true });
      const w = await (await d.getFileHandle(parts.at(-1)!, { create: true })).createWritable();
      await w.write(await (await fetch(new URL(args.base + f, location.href))).arrayBuffer());
      await w.close();
    }
    source = await FilesSource.fromDirectoryHandle(dir);
  } else {
    const input = document.querySelector<HTMLInputElement>(args.input);
    if (!input?.files?.length) throw new Error(`no files in ${args.input}`);
    source = new FilesSource(input.files, 'picked folder');
  }
  const gpu = await Gpu.create();
  let progressCalls = 0;
  const { config, weights } = await loadQwen3(gpu, source, { dtype: 'f32', onProgress: () => progressCalls++ });
  const byName = new Map(weightTensors(weights).map((t) => [t.label, t]));
  const tensors: NonNullable<ModelPageResult['tensors']> = {};
  for (const name of args.tensors) {
    const t = byName.get(name);
    if (!t) throw new Error(`no tensor ${name} loaded`);
    tensors[name] = { dtype: t.dtype, shape: [...t.shape], values: Array.from(await gpu.readF32(t)) };
  }
  releaseQwen3Weights(weights);
  const runtime = gpu.report.runtime;
  gpu.destroy();
  return {
    runtime,
    tensors,
    numLayers: config.numLayers,
    progressCalls,
    opfsFiles: args.kind === 'url' && args.opfs ? await opfsCount() : undefined,
  };
}
