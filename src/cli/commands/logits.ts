// `troupe logits`: the model's logits for a list of token ids, written as float32 little-endian [T, vocab].
import { Gpu } from '../../gpu/gpu.ts';
import { parse } from '../args.ts';
import { UsageError, type Command } from '../command.ts';
import { atomicWriteFile, checkWritable } from '../../util/atomic-write.ts';
import { checkIds, MODEL_OPTIONS, MODEL_USAGE, openModel, parseIds } from '../model-args.ts';

export class NonFiniteOutputError extends Error {
  override name = 'NonFiniteOutputError';
}

/** Throws, naming the first NaN/Inf's position and vocab index and how many there are, unless all `rows x cols` values are finite. */
export function checkFiniteRows(what: string, x: Float32Array, cols: number): void {
  let count = 0;
  let first = -1;
  for (let i = 0; i < x.length; i++) {
    if (!Number.isFinite(x[i]!)) {
      count++;
      if (first < 0) first = i;
    }
  }
  if (count === 0) return;
  throw new NonFiniteOutputError(
    `${what}: ${count} of ${x.length} values are NaN or Inf, the first at position ${Math.floor(first / cols)}, vocab index ${first % cols} (${x[first]}); nothing was written`,
  );
}

export const command: Command = {
  name: 'logits',
  summary: 'logits of a token sequence, as raw float32 [T, vocab]',
  usage: [
    'usage: troupe logits (--model DIR | --random-weights PRESET) --ids 1,2,3 --out FILE [--dtype f16|f32]',
    '',
    ...MODEL_USAGE,
    '  --ids LIST                comma-separated token ids (one sequence, positions 0..T-1)',
    '  --out FILE                where to write the logits: float32 little-endian, row-major [T, vocab]',
    '',
    'The last line printed is {"tokens": T, "vocab": V, "out": FILE}.',
  ].join('\n'),
  async run(argv) {
    const { values } = parse('logits', { args: argv, options: { ...MODEL_OPTIONS, ids: { type: 'string' }, out: { type: 'string' } } });
    if (values.ids === undefined) throw new UsageError('troupe logits: --ids is required');
    if (values.out === undefined) throw new UsageError('troupe logits: --out is required');
    const ids = parseIds('logits', values.ids);
    // Before any work: an output that cannot be written fails now, not after the forward pass.
    await checkWritable(values.out);
    const gpu = await Gpu.create();
    try {
      const { model } = await openModel(gpu, 'logits', values);
      const vocab = model.config.vocabSize;
      checkIds('logits', ids, vocab);
      const logits = await gpu.readF32(model.forward({ ids: Uint32Array.from(ids), seqLens: [ids.length] }));
      checkFiniteRows(`troupe logits: the logits [${ids.length}, ${vocab}]`, logits, vocab);
      // Float32Array is little-endian on every platform WebGPU runs on. Complete or absent, never half a file.
      await atomicWriteFile(values.out, new Uint8Array(logits.buffer, logits.byteOffset, logits.byteLength));
      console.log(JSON.stringify({ tokens: ids.length, vocab: model.config.vocabSize, out: values.out }));
      return 0;
    } finally {
      gpu.destroy();
    }
  },
};
