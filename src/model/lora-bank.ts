// Every adapter of an AdapterSet side by side on the GPU, so one forward can give each row its own
// adapter (or none) through the lora_rows kernel: no sorting rows by adapter, no row copies. Per
// (layer, module) a bank A [n, r, in] and B [n, out, r] (r: the largest rank) is filled by GPU copies of
// each adapter's A and B, re-copied by sync(name) after an adapter's weights change (optimizer step).
// Inference only: training runs through the adapters themselves (RoutedAdapter has the backward).
import type { Gpu } from '../gpu/gpu.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { loraRows, type LoraRowsBank, NO_ADAPTER } from '../kernels/lora-rows.ts';
import { LINEAR_MODULES, type LinearAdapter, type LinearModule } from './adapter.ts';
import type { Qwen3Config } from './config.ts';
import { type AdapterSet, type LinearShape, type LoraAdapter, LoraError, linearShapes } from './lora.ts';

/** One forward's per-row adapters over a bank; release() after the forward is recorded. */
export interface RowsAdapter extends LinearAdapter {
  release(): void;
}

export class LoraBank {
  /** Adapter names by slot: row index a means names[a]. */
  readonly names: readonly string[];
  /** The slot rank: the largest adapter rank. */
  readonly rank: number;
  private readonly adapters: LoraAdapter[];
  private readonly shapes: Record<LinearModule, LinearShape>;
  private readonly scale: Tensor;
  /** u32 [n] per module: each adapter's rank there, 0 where it does not target the module. */
  private readonly ranks = new Map<LinearModule, Tensor>();
  private readonly banks = new Map<string, { A: Tensor; B: Tensor }>();
  private released = false;

  constructor(
    readonly gpu: Gpu,
    set: AdapterSet,
    model: Qwen3Config,
  ) {
    this.names = set.names;
    if (!this.names.length) throw new LoraError('LoRA bank: the adapter set is empty');
    this.adapters = this.names.map((n) => set.get(n));
    this.rank = Math.max(...this.adapters.map((a) => a.config.rank));
    this.shapes = linearShapes(model);
    for (const a of this.adapters) {
      if (a.numLayers !== model.numLayers) throw new LoraError(`LoRA bank: adapter ${a.name} has ${a.numLayers} layers, the model ${model.numLayers}`);
      for (const m of a.config.targets) {
        const s = a.shapes[m];
        const want = this.shapes[m];
        if (s.in !== want.in || s.out !== want.out) throw new LoraError(`LoRA bank: adapter ${a.name} ${m} is [${s.out}, ${s.in}], the model's is [${want.out}, ${want.in}]`);
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
      for (let l = 0; l < model.numLayers; l++) {
        this.banks.set(`${l}.${m}`, {
          A: gpu.tensor([n, r, s.in], 'f32', `lora_bank.${l}.${m}.A`),
          B: gpu.tensor([n, s.out, r], 'f32', `lora_bank.${l}.${m}.B`),
        });
      }
    }
    this.names.forEach((_, i) => this.copyIn(i));
  }

  private rankRow(m: LinearModule): Uint32Array {
    return Uint32Array.from(this.adapters, (a) => (a.config.targets.includes(m) ? a.config.rank : 0));
  }

  /** Whether the bank holds exactly the set's adapters (same names, same objects, same order). */
  matches(set: AdapterSet): boolean {
    const names = set.names;
    return names.length === this.names.length && names.every((n, i) => n === this.names[i] && set.get(n) === this.adapters[i]);
  }

  private slot(name: string): number {
    const i = this.names.indexOf(name);
    if (i < 0) throw new LoraError(`LoRA bank: no adapter ${name} (have: ${this.names.join(', ')})`);
    return i;
  }

  private live(): void {
    if (this.released) throw new LoraError('LoRA bank was released');
  }

  /** Copies adapter `slot`'s A and B into its slot of every (layer, module) it targets. */
  private copyIn(slot: number): void {
    const a = this.adapters[slot]!;
    const r = this.rank;
    for (const { layer, module, pair } of a.entries()) {
      const bank = this.banks.get(`${layer}.${module}`)!;
      const s = this.shapes[module];
      this.gpu.copy(pair.A, bank.A, a.config.rank * s.in * 4, 0, slot * r * s.in * 4);
      this.gpu.copy(pair.B, bank.B, s.out * a.config.rank * 4, 0, slot * s.out * r * 4);
    }
  }

  /** Re-copies one adapter after its weights changed (e.g. an optimizer step). */
  sync(name: string): void {
    this.live();
    this.copyIn(this.slot(name));
  }

  /** A LinearAdapter for one forward whose row t uses adapter adapterPerRow[t] (null: the base model).
   * Uploads the row indices once; release() it once the forward is recorded. */
  forRows(adapterPerRow: readonly (string | null)[]): RowsAdapter {
    this.live();
    if (!adapterPerRow.length) throw new LoraError('LoRA bank: forRows needs at least one row');
    const slots = new Map<string, number>();
    const index = Uint32Array.from(adapterPerRow, (name) => {
      if (name === null) return NO_ADAPTER;
      let i = slots.get(name);
      if (i === undefined) slots.set(name, (i = this.slot(name)));
      return i;
    });
    const rows = this.gpu.upload(index, [index.length], 'u32', 'lora_bank.rows');
    return {
      apply: (gpu, layer, module, x, y) => {
        this.live();
        const b = this.banks.get(`${layer}.${module}`);
        if (!b) return;
        const bank: LoraRowsBank = { A: b.A, B: b.B, scale: this.scale, rank: this.ranks.get(module)! };
        loraRows(gpu, x, y, rows, bank, `lora_rows.${module}`);
      },
      release: () => rows.release(),
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
