// Page module for browser-matmul.test.ts: the matmul autotuner in the browser. Tunes two small products, stores
// the table in OPFS, loads it back into matmul's auto policy, then corrupts the stored file; returns what each step
// saw, for the test to check.
import { Gpu } from '../../../src/gpu/gpu.ts';
import { tuneMatmuls } from '../../../src/kernels/matmul-tune.ts';
import { applyStoredTuning, loadTuning, saveTuning, tuningLocation } from '../../../src/kernels/matmul-tune-store.ts';
import { matmulTuning, setMatmulTuning, type TuneShape } from '../../../src/kernels/matmul-tuning.ts';

export interface TuneStorePageResult {
  where: string;
  saved: string;
  tuned: number;
  loaded: number | null;
  appliedNote: string | null;
  appliedEntries: number | null;
  corruptError: string | null;
}

export default async function run(): Promise<TuneStorePageResult> {
  const gpu = await Gpu.create();
  const shapes: TuneShape[] = [
    { M: 32, N: 64, K: 48, transA: false, transB: true, a: 'f32', b: 'f32' },
    { M: 32, N: 48, K: 64, transA: false, transB: false, a: 'f32', b: 'f32' },
  ];
  const table = await tuneMatmuls(gpu, shapes, { roundMs: 1, rounds: 1 });
  const where = tuningLocation(gpu);
  const saved = await saveTuning(gpu, table);
  const loaded = (await loadTuning(gpu))?.entries.length ?? null;
  setMatmulTuning(gpu, null);
  const applied = await applyStoredTuning(gpu);
  const appliedEntries = matmulTuning(gpu)?.entries.length ?? null;
  // the stored file, cut short
  const folder = await (await navigator.storage.getDirectory()).getDirectoryHandle('troupe-cache');
  const writable = await (await folder.getFileHandle(where.slice(where.lastIndexOf('/') + 1))).createWritable();
  await writable.write('{"format": "troupe-matmul-tuning", "version": 1, "key": ');
  await writable.close();
  let corruptError: string | null = null;
  try {
    await loadTuning(gpu);
  } catch (e) {
    corruptError = `${(e as Error).name}: ${(e as Error).message}`;
  }
  gpu.destroy();
  return { where, saved, tuned: table.entries.length, loaded, appliedNote: applied?.note ?? null, appliedEntries, corruptError };
}
