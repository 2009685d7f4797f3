// A table of tuned matmul choices (src/kernels/matmul-tune.ts measures them, matmul-tune-store.ts keeps them per
// adapter) and its lookup, which matmul()'s auto policy asks before its shape heuristic. A tuned row count M
// stands for the rows above the next smaller tuned count up to M (the first for M/2 < rows <= M): decode and
// rollout batches shrink as sequences finish, so a product is rarely the exact count tuned.
import type { Gpu } from '../gpu/gpu.ts';
import type { MatmulShape, MatmulVariant, OperandTypes } from './matmul.ts';
import type { TcTileName } from './matmul-tc.ts';

/** A tuning table that cannot be used (corrupt file, an entry no kernel here can run), or a tuning run that failed. */
export class TuningError extends Error {
  override name = 'TuningError';
}

/** One way to run a product: the kernel and, for the tensor-core kernels, its tile or K split. */
export interface MatmulChoice {
  variant: MatmulVariant;
  tcTile?: TcTileName;
  tcSplits?: number;
  /** tc_direct: slices staged in workgroup memory (version 2); absent: the default version. */
  tcStaged?: boolean;
}

export interface TuneShape extends MatmulShape, OperandTypes {}

export interface TunedEntry extends TuneShape {
  choice: MatmulChoice;
  /** GPU seconds a call of the choice, and of what the heuristic picks (auto), as measured. */
  seconds: number;
  auto: MatmulChoice;
  autoSeconds: number;
}

/** Entries whose tuned choice beats the heuristic's by more than 3% (the rest is within timing noise). */
export function fasterThanHeuristic(entries: readonly TunedEntry[]): number {
  return entries.filter((e) => e.seconds * 1.03 < e.autoSeconds).length;
}

/** 'tc:128x128k16', 'tc_direct/4', 'tc_direct/4s' (staged), 'tile64v': how tables and reports name a choice. */
export function choiceName(c: MatmulChoice): string {
  if (c.tcTile) return `${c.variant}:${c.tcTile}`;
  if (c.tcSplits !== undefined) return `${c.variant}/${c.tcSplits}${c.tcStaged ? 's' : ''}`;
  return c.variant;
}

/** Key of the products one tuned row sweep covers (all but M). */
export function productKey(s: Omit<TuneShape, 'M'>): string {
  return `${s.N}x${s.K}|${s.transA ? 't' : 'n'}${s.transB ? 't' : 'n'}|${s.a}|${s.b}`;
}

export class MatmulTuning {
  private readonly sweeps = new Map<string, TunedEntry[]>();

  /** `source`: where the table came from (a file, a browser key, 'measured'), for messages. */
  constructor(
    readonly entries: readonly TunedEntry[],
    readonly source: string,
  ) {
    for (const e of entries) {
      const key = productKey(e);
      let sweep = this.sweeps.get(key);
      if (!sweep) this.sweeps.set(key, (sweep = []));
      if (sweep.some((o) => o.M === e.M)) throw new TuningError(`${source}: ${e.M}x${key} is tuned twice`);
      sweep.push(e);
    }
    for (const sweep of this.sweeps.values()) sweep.sort((x, y) => x.M - y.M);
  }

  /** The tuned choice for this product, or null where no tuned row count covers its rows. */
  lookup(s: MatmulShape, t: OperandTypes): MatmulChoice | null {
    const sweep = this.sweeps.get(productKey({ ...s, a: t.a, b: t.b }));
    if (!sweep) return null;
    for (let i = 0; i < sweep.length; i++) {
      const e = sweep[i]!;
      if (s.M > e.M) continue;
      const below = i > 0 ? sweep[i - 1]!.M : e.M / 2;
      return s.M > below ? e.choice : null;
    }
    return null;
  }
}

const tunings = new WeakMap<Gpu, MatmulTuning>();

/** Makes matmul()'s auto policy on `gpu` take this table's choices (null: the shape heuristic alone). */
export function setMatmulTuning(gpu: Gpu, tuning: MatmulTuning | null): void {
  if (tuning) tunings.set(gpu, tuning);
  else tunings.delete(gpu);
}

export function matmulTuning(gpu: Gpu): MatmulTuning | undefined {
  return tunings.get(gpu);
}
