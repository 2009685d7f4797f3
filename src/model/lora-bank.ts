// Every adapter of an AdapterSet side by side on the GPU, so one forward can give each row its own
// adapter (or none) through the lora_rows kernel: rows are grouped by adapter into tiles once per batch (no
// row copies). Per (layer, module) a bank A [n, in, r] and B [n, r, out] (r: the largest rank) holds each
// adapter's A and B transposed (the kernel's threads then read neighbouring words), filled on the GPU by
// transposeInto. The bank remembers the version of each adapter it copied and re-copies any
// adapter whose version moved (an optimizer step, markUpdated) before every forward, so it never serves
// stale weights. forRows is the per-row path of both the rollout engine and the trainer (AdapterSet.rows):
// its backward gathers each adapter's rows (x, dy), runs that adapter's LoRA backward on them (matmuls,
// gradients into its own dA/dB) and scatter-adds its d x rows back: deterministic, no float atomics.
import type { Gpu } from '../gpu/gpu.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { embedding, embeddingBackward, type ScatterPlan, scatterPlan } from '../kernels/embedding.ts';
import { loraRows, loraRowTiles, type LoraRowsBank, NO_ADAPTER, rowsBySlot } from '../kernels/lora-rows.ts';
import { transposeInto } from '../kernels/transpose.ts';
import { LINEAR_MODULES, type LinearModule, LoraError } from './adapter.ts';
import type { AdapterSet, LinearShape, LoraAdapter, RowsTrainableAdapter } from './lora.ts';

/** One adapter's rows of a batch, for the backward's gather / scatter. */
interface RowGroup {
  slot: number;
  rows: Uint32Array;
  /** Uploaded on first backward. */
  index: Tensor | null;
  /** The scatter of its d x rows back into the batch's, made on first backward. */
  scatter: ScatterPlan | null;
}

export class LoraBank {
  /** Adapter names by slot: row index a means names[a]. */
  readonly names: readonly string[];
  /** The slot rank: the largest adapter rank. */
  readonly rank: number;
  private readonly adapters: LoraAdapter[];
  private readonly shapes: Record<LinearModule, LinearShape>;
  private readonly numLayers: number;
  private readonly scale: Tensor;
  /** u32 [n] per module: each adapter's rank there, 0 where it does not target the module. */
  private readonly ranks = new Map<LinearModule, Tensor>();
  private readonly banks = new Map<string, { A: Tensor; B: Tensor }>();
  /** The version of each slot's adapter that the bank holds. */
  private readonly copied: number[];
  private released = false;

  constructor(
    readonly gpu: Gpu,
    set: AdapterSet,
  ) {
    this.names = set.names;
    if (!this.names.length) throw new LoraError('LoRA bank: the adapter set is empty');
    this.adapters = this.names.map((n) => set.get(n));
    this.rank = Math.max(...this.adapters.map((a) => a.config.rank));
    const first = this.adapters[0]!;
    this.shapes = first.shapes;
    this.numLayers = first.numLayers;
    for (const a of this.adapters) {
      if (a.numLayers !== this.numLayers) throw new LoraError(`LoRA bank: adapter ${a.name} has ${a.numLayers} layers, adapter ${first.name} ${this.numLayers}`);
      for (const m of LINEAR_MODULES) {
        const s = a.shapes[m];
        const want = this.shapes[m];
        if (s.in !== want.in || s.out !== want.out) throw new LoraError(`LoRA bank: adapter ${a.name} ${m} is [${s.out}, ${s.in}], adapter ${first.name}'s is [${want.out}, ${want.in}]`);
      }
    }
    const n = this.names.length;
    const r = this.rank;
    const maxBind = gpu.limits.maxStorageBufferBindingSize;
    this.scale = gpu.upload(Float32Array.from(this.adapters, (a) => a.scale), [n], 'f32', 'lora_bank.scale');
    for (const m of LINEAR_MODULES) {
      if (!this.adapters.some((a) => a.config.targets.includes(m))) continue;
      this.ranks.set(m, gpu.upload(this.rankRow(m), [n], 'u32', `lora_bank.${m}.rank`));
      const s = this.shapes[m];
      for (const [what, bytes] of [['A', n * r * s.in * 4], ['B', n * s.out * r * 4]] as const) {
        if (bytes > maxBind) {
          throw new LoraError(`LoRA bank: ${m} ${what} of ${n} adapters at rank ${r} is ${bytes} bytes, over maxStorageBufferBindingSize ${maxBind}: use fewer adapters at once`);
        }
      }
      for (let l = 0; l < this.numLayers; l++) {
        this.banks.set(`${l}.${m}`, {
          A: gpu.tensor([n, s.in, r], 'f32', `lora_bank.${l}.${m}.A`),
          B: gpu.tensor([n, r, s.out], 'f32', `lora_bank.${l}.${m}.B`),
        });
      }
    }
    this.copied = this.adapters.map(() => -1);
    this.refresh();
  }

  private rankRow(m: LinearModule): Uint32Array {
    return Uint32Array.from(this.adapters, (a) => (a.config.targets.includes(m) ? a.config.rank : 0));
  }

  /** Whether the bank holds exactly the set's adapters (same names, same objects, same order). */
  matches(set: AdapterSet): boolean {
    const names = set.names;
    return !this.released && names.length === this.names.length && names.every((n, i) => n === this.names[i] && set.get(n) === this.adapters[i]);
  }

  private slot(name: string): number {
    const i = this.names.indexOf(name);
    if (i < 0) throw new LoraError(`LoRA bank: no adapter ${name} (have: ${this.names.join(', ')})`);
    return i;
  }

  private live(): void {
    if (this.released) throw new LoraError('LoRA bank was released');
  }

  /** Writes adapter `slot`'s A [rank, in] and B [out, rank], transposed, into its slot of every (layer, module) it targets. */
  private copyIn(slot: number): void {
    const a = this.adapters[slot]!;
    const r = this.rank;
    for (const { layer, module, pair } of a.entries()) {
      const bank = this.banks.get(`${layer}.${module}`)!;
      const s = this.shapes[module];
      transposeInto(this.gpu, pair.A, bank.A, r, slot * s.in * r);
      transposeInto(this.gpu, pair.B, bank.B, s.out, slot * r * s.out);
    }
    this.copied[slot] = a.version;
  }

  /** Re-copies every adapter whose version differs from the one the bank holds. */
  refresh(): void {
    this.live();
    this.adapters.forEach((a, i) => {
      if (a.version !== this.copied[i]) this.copyIn(i);
    });
  }

  /** Re-copies one adapter whatever its version (weights written without markUpdated). */
  sync(name: string): void {
    this.live();
    this.copyIn(this.slot(name));
  }

  /** The per-row adapter of one packed batch: row t uses adapterPerRow[t] (null: the base model). Uploads
   * the row tiles once; release() it once the forward (and backward) is recorded. */
  forRows(adapterPerRow: readonly (string | null)[]): RowsTrainableAdapter {
    this.live();
    const T = adapterPerRow.length;
    if (!T) throw new LoraError('LoRA bank: forRows needs at least one row');
    const slots = new Map<string, number>();
    const index = Uint32Array.from(adapterPerRow, (name) => {
      if (name === null) return NO_ADAPTER;
      let i = slots.get(name);
      if (i === undefined) slots.set(name, (i = this.slot(name)));
      return i;
    });
    const grouped = rowsBySlot(index, this.names.length);
    const groups: RowGroup[] = [...grouped.slots].map(([slot, rows]) => ({ slot, rows, index: null, scatter: null }));
    const rows = loraRowTiles(this.gpu, grouped, 'lora_bank.tiles');
    const checkRows = (what: string, module: LinearModule, t: Tensor) => {
      if (t.shape[0] !== T) throw new LoraError(`LoRA rows ${module}: ${what} ${t.label} has ${t.shape[0]} rows, the batch's adapters name ${T}`);
    };
    let released = false;
    const live = () => {
      this.live();
      if (released) throw new LoraError('LoRA rows adapter was released');
    };
    return {
      apply: (gpu, layer, module, x, y) => {
        live();
        const b = this.banks.get(`${layer}.${module}`);
        if (!b) return;
        checkRows('x', module, x);
        this.refresh();
        const bank: LoraRowsBank = { A: b.A, B: b.B, scale: this.scale, rank: this.ranks.get(module)! };
        loraRows(gpu, x, y, rows, bank, `lora_rows.${module}`);
      },
      backward: (gpu, layer, module, x, dy, dx) => {
        live();
        checkRows('x', module, x);
        checkRows('dy', module, dy);
        if (dx) checkRows('dx', module, dx);
        for (const g of groups) {
          const a = this.adapters[g.slot]!;
          if (!a.pair(layer, module)) continue;
          if (g.rows.length === T) {
            a.backward(gpu, layer, module, x, dy, dx);
            continue;
          }
          g.index ??= gpu.upload(g.rows, [g.rows.length], 'u32', `lora_rows.${a.name}.rows`);
          const xs = embedding(gpu, x, g.index);
          const dys = embedding(gpu, dy, g.index);
          const dxs = dx ? gpu.tensor([g.rows.length, x.shape[1]!], 'f32', `lora_rows.${module}.dx`) : null;
          a.backward(gpu, layer, module, xs, dys, dxs, false);
          if (dxs) {
            g.scatter ??= scatterPlan(gpu, g.rows, T);
            embeddingBackward(gpu, dxs, g.scatter, dx!);
            dxs.release();
          }
          xs.release();
          dys.release();
        }
      },
      release: () => {
        if (released) return;
        released = true;
        rows.tiles.release();
        for (const g of groups) {
          g.index?.release();
          g.scatter?.release();
        }
      },
    };
  }

  release(): void {
    if (this.released) return;
    for (const b of this.banks.values()) {
      b.A.release();
      b.B.release();
    }
    for (const t of this.ranks.values()) t.release();
    this.scale.release();
    this.released = true;
  }
}
