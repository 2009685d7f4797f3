// LoRA adapters on the GPU: per (layer, module) A [r, in] and B [out, r] in f32, y += scale·(x·Aᵀ)·Bᵀ
// with scale = alpha / r, and the backward into gradient buffers. Several adapters live at once (one per
// role type under isolated policies) in an AdapterSet; AdapterSet.rows gives each row of a packed batch its
// own adapter (or none), in any order, through the lora_rows kernel over the set's LoraBank: the rollout
// engine and the trainer run that same path. Each adapter carries a version, bumped whenever its weights
// change (markUpdated: the optimizer calls it), so the bank and the prefix cache never serve stale weights.
// Trainable parameters are a flat list of {name, param, grad}, for LoRA tensors (PEFT names) and, in
// full-parameter mode, base weights (Hugging Face names).
import type { Gpu } from '../gpu/gpu.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { expectDtype, ShapeError } from '../kernels/check.ts';
import { matmul } from '../kernels/matmul.ts';
import { LINEAR_MODULES, type LinearAdapter, type LinearModule, LoraError } from './adapter.ts';
import type { Qwen3Config } from './config.ts';
import { LoraBank } from './lora-bank.ts';
import { weightTensors, type LayerWeights, type Qwen3Weights } from './weights.ts';
import { mulberry32 } from '../util/mulberry32.ts';

export interface LoraConfig {
  rank: number;
  alpha: number;
  targets: LinearModule[];
}

/** The study's adapters: rank 64, alpha 32 (scale 0.5), all seven linear layers. */
export const DEFAULT_LORA: LoraConfig = { rank: 64, alpha: 32, targets: [...LINEAR_MODULES] };

/** A tensor the optimizer updates and the gradient the backward accumulates into it (f32, same shape). */
export interface TrainableParam {
  name: string;
  param: Tensor;
  grad: Tensor;
  /** Told after an optimizer step changed param (a LoRA adapter: bumps its version). */
  owner?: { markUpdated(): void };
}

/** A LinearAdapter whose delta has a backward. */
export interface TrainableLinearAdapter extends LinearAdapter {
  /** Given the module's input x [T, in] and d loss / d y [T, out]: accumulates the adapter's parameter
   * gradients and adds its part of d loss / d x into dx [T, in] (dx null: not needed). */
  backward(gpu: Gpu, layer: number, module: LinearModule, x: Tensor, dy: Tensor, dx: Tensor | null): void;
}

/** Per-row adapters over one packed batch (AdapterSet.rows); release() once its forward/backward is recorded. */
export interface RowsTrainableAdapter extends TrainableLinearAdapter {
  release(): void;
}

export { LoraError };

export interface LinearShape {
  in: number;
  out: number;
}

/** [in, out] of each linear module of a Qwen3 layer. */
export function linearShapes(c: Qwen3Config): Record<LinearModule, LinearShape> {
  const q = c.numHeads * c.headDim;
  const kv = c.numKvHeads * c.headDim;
  const h = c.hiddenSize;
  const i = c.intermediateSize;
  return {
    q_proj: { in: h, out: q },
    k_proj: { in: h, out: kv },
    v_proj: { in: h, out: kv },
    o_proj: { in: q, out: h },
    gate_proj: { in: h, out: i },
    up_proj: { in: h, out: i },
    down_proj: { in: i, out: h },
  };
}

/** The PEFT key of a LoRA tensor: base_model.model.model.layers.{i}.{self_attn|mlp}.{module}.lora_{A|B}.weight */
export function peftKey(layer: number, module: LinearModule, which: 'A' | 'B'): string {
  const block = module === 'gate_proj' || module === 'up_proj' || module === 'down_proj' ? 'mlp' : 'self_attn';
  return `base_model.model.model.layers.${layer}.${block}.${module}.lora_${which}.weight`;
}

export function checkLoraConfig(c: LoraConfig, where = 'LoRA config'): void {
  if (!Number.isInteger(c.rank) || c.rank < 1) throw new LoraError(`${where}: rank must be a positive integer, got ${c.rank}`);
  if (!(Number.isFinite(c.alpha) && c.alpha > 0)) throw new LoraError(`${where}: alpha must be > 0, got ${c.alpha}`);
  if (!c.targets.length) throw new LoraError(`${where}: no target modules`);
  for (const t of c.targets) {
    if (!(LINEAR_MODULES as readonly string[]).includes(t)) throw new LoraError(`${where}: unknown target module ${t} (troupe adapts ${LINEAR_MODULES.join(', ')})`);
  }
}

function uniform(n: number, bound: number, next: () => number): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = (2 * next() - 1) * bound;
  return out;
}

export interface LoraInit {
  seed: number;
  /** B zeros (PEFT's default: the adapter starts as the identity), or uniform in ±bound (tests). */
  randomB?: number;
}

export interface LoraPair {
  A: Tensor;
  B: Tensor;
  /** Allocated on first need (frozen adapters never get them). */
  dA: Tensor | null;
  dB: Tensor | null;
}

/** Versions come from one clock, so an adapter never shares a version with an earlier one of its name. */
let versionClock = 0;

/** One LoRA adapter over all layers of a model. */
export class LoraAdapter implements TrainableLinearAdapter {
  readonly scale: number;
  private readonly pairs = new Map<string, LoraPair>();
  private released = false;
  private currentVersion = ++versionClock;

  constructor(
    readonly gpu: Gpu,
    readonly name: string,
    readonly config: LoraConfig,
    readonly numLayers: number,
    readonly shapes: Record<LinearModule, LinearShape>,
    /** A and B per layer per target, f32; when absent, initialised like PEFT from `init`. */
    tensors?: (layer: number, module: LinearModule) => { A: Tensor; B: Tensor },
    init: LoraInit = { seed: 0 },
  ) {
    checkLoraConfig(config, `adapter ${name}`);
    this.scale = config.alpha / config.rank;
    const next = mulberry32(init.seed);
    const r = config.rank;
    for (let l = 0; l < numLayers; l++) {
      for (const m of config.targets) {
        const s = shapes[m];
        let pair: { A: Tensor; B: Tensor };
        if (tensors) {
          pair = tensors(l, m);
          for (const [t, shape] of [[pair.A, [r, s.in]], [pair.B, [s.out, r]]] as const) {
            expectDtype(`adapter ${name}`, t, 'f32');
            if (t.shape.length !== 2 || t.shape[0] !== shape[0] || t.shape[1] !== shape[1]) {
              throw new ShapeError(`adapter ${name}: ${t.label} has shape [${t.shape}], expected [${shape}]`);
            }
          }
        } else {
          // kaiming_uniform_(a=√5) as PEFT/nn.Linear: bound = 1/√fan_in
          const A = gpu.upload(uniform(r * s.in, 1 / Math.sqrt(s.in), next), [r, s.in], 'f32', `${name}.${peftKey(l, m, 'A')}`);
          const bData = init.randomB ? uniform(s.out * r, init.randomB, next) : new Float32Array(s.out * r);
          const B = gpu.upload(bData, [s.out, r], 'f32', `${name}.${peftKey(l, m, 'B')}`);
          pair = { A, B };
        }
        this.pairs.set(`${l}.${m}`, { ...pair, dA: null, dB: null });
      }
    }
  }

  /** A new adapter for a model, PEFT-initialised (B = 0 unless init.randomB). */
  static create(gpu: Gpu, name: string, model: Qwen3Config, config: LoraConfig = DEFAULT_LORA, init: LoraInit = { seed: 0 }): LoraAdapter {
    return new LoraAdapter(gpu, name, config, model.numLayers, linearShapes(model), undefined, init);
  }

  /** Changes whenever the weights do (markUpdated); a new adapter (created or loaded) starts with a fresh one. */
  get version(): number {
    return this.currentVersion;
  }

  /** Call after A or B changed (the optimizer does): copies of the weights (the LoRA bank) re-sync and
   * K/V cached under the old version stop matching. */
  markUpdated(): void {
    this.currentVersion = ++versionClock;
  }

  /** The A and B of a layer's module, or null when the module is not a target. */
  pair(layer: number, module: LinearModule): LoraPair | null {
    if (this.released) throw new LoraError(`adapter ${this.name} was released`);
    return this.pairs.get(`${layer}.${module}`) ?? null;
  }

  /** (layer, module) of every adapted linear, in PEFT order (layer, then module). */
  entries(): { layer: number; module: LinearModule; pair: LoraPair }[] {
    const out: { layer: number; module: LinearModule; pair: LoraPair }[] = [];
    for (let l = 0; l < this.numLayers; l++) {
      for (const m of LINEAR_MODULES) {
        const p = this.pair(l, m);
        if (p) out.push({ layer: l, module: m, pair: p });
      }
    }
    return out;
  }

  private grads(p: LoraPair): { dA: Tensor; dB: Tensor } {
    p.dA ??= this.gpu.upload(new Float32Array(p.A.size), p.A.shape, 'f32', `${p.A.label}.grad`);
    p.dB ??= this.gpu.upload(new Float32Array(p.B.size), p.B.shape, 'f32', `${p.B.label}.grad`);
    return { dA: p.dA, dB: p.dB };
  }

  /** Every A and B with its gradient buffer (allocated, zeroed, on first call), PEFT names. */
  parameters(): TrainableParam[] {
    return this.entries().flatMap(({ layer, module, pair }) => {
      const g = this.grads(pair);
      return [
        { name: peftKey(layer, module, 'A'), param: pair.A, grad: g.dA, owner: this },
        { name: peftKey(layer, module, 'B'), param: pair.B, grad: g.dB, owner: this },
      ];
    });
  }

  private checkRows(module: LinearModule, x: Tensor, y: Tensor, xw: number, yw: number): void {
    const T = x.shape[0];
    if (x.shape.length !== 2 || x.shape[1] !== xw) throw new ShapeError(`adapter ${this.name} ${module}: ${x.label} has shape [${x.shape}], expected [T, ${xw}]`);
    if (y.shape.length !== 2 || y.shape[0] !== T || y.shape[1] !== yw) throw new ShapeError(`adapter ${this.name} ${module}: ${y.label} has shape [${y.shape}], expected [${T}, ${yw}]`);
  }

  /** y[T, out] += scale·(x·Aᵀ)·Bᵀ */
  apply(gpu: Gpu, layer: number, module: LinearModule, x: Tensor, y: Tensor): void {
    const p = this.pair(layer, module);
    if (!p) return;
    const s = this.shapes[module];
    this.checkRows(module, x, y, s.in, s.out);
    const label = `lora.${module}`;
    const h = matmul(gpu, x, p.A, { transB: true, label: `${label}.xA` });
    matmul(gpu, h, p.B, { transB: true, alpha: this.scale, accumulate: true, out: y, label: `${label}.hB` });
    h.release();
  }

  /** dB += scale·dyᵀ·(x·Aᵀ); dA += scale·(dy·B)ᵀ·x; dx += scale·(dy·B)·A (accumulateDx false: dx =).
   * x·Aᵀ is recomputed (T·r·in flops, cheaper than keeping [T, r] per module per layer through the forward). */
  backward(gpu: Gpu, layer: number, module: LinearModule, x: Tensor, dy: Tensor, dx: Tensor | null, accumulateDx = true): void {
    const p = this.pair(layer, module);
    if (!p) return;
    const s = this.shapes[module];
    this.checkRows(module, x, dy, s.in, s.out);
    if (dx) this.checkRows(module, x, dx, s.in, s.in);
    const { dA, dB } = this.grads(p);
    const label = `lora.${module}.bwd`;
    const h = matmul(gpu, x, p.A, { transB: true, label: `${label}.xA` });
    matmul(gpu, dy, h, { transA: true, alpha: this.scale, accumulate: true, out: dB, label: `${label}.dB` });
    h.release();
    const g = matmul(gpu, dy, p.B, { label: `${label}.dyB` });
    matmul(gpu, g, x, { transA: true, alpha: this.scale, accumulate: true, out: dA, label: `${label}.dA` });
    if (dx) matmul(gpu, g, p.A, { alpha: this.scale, accumulate: accumulateDx, out: dx, label: `${label}.dx` });
    g.release();
  }

  release(): void {
    if (this.released) return;
    for (const p of this.pairs.values()) for (const t of [p.A, p.B, p.dA, p.dB]) t?.release();
    this.released = true;
  }
}

/** Adapters alive on the GPU at once, by name (e.g. one per role type under isolated policies), and the
 * LoraBank of them all that per-row batches run through (built on first need, rebuilt after add/delete). */
export class AdapterSet {
  private readonly adapters = new Map<string, LoraAdapter>();
  private bank: LoraBank | null = null;

  add(adapter: LoraAdapter): LoraAdapter {
    if (this.adapters.has(adapter.name)) throw new LoraError(`adapter set: an adapter named ${adapter.name} exists already`);
    this.adapters.set(adapter.name, adapter);
    this.dropBank();
    return adapter;
  }

  get(name: string): LoraAdapter {
    const a = this.adapters.get(name);
    if (!a) throw new LoraError(`adapter set: no adapter ${name} (have: ${[...this.adapters.keys()].join(', ') || 'none'})`);
    return a;
  }

  has(name: string): boolean {
    return this.adapters.has(name);
  }

  get names(): string[] {
    return [...this.adapters.keys()];
  }

  /** Removes and releases an adapter. */
  delete(name: string): void {
    this.get(name).release();
    this.adapters.delete(name);
    this.dropBank();
  }

  /** Row t of a packed batch goes through adapter rowAdapters[t] (null: the base model only), rows in any
   * order. apply is the lora_rows kernel over the set's bank (what the rollout engine runs); backward
   * accumulates every touched adapter's dA/dB and adds into dx. Stale adapters (a newer version than the
   * bank copied) re-sync on every apply. release() once the forward/backward is recorded. */
  rows(rowAdapters: readonly (string | null)[]): RowsTrainableAdapter {
    if (!rowAdapters.length) throw new LoraError('adapter set: rows needs at least one row');
    for (const name of new Set(rowAdapters)) if (name !== null) this.get(name);
    if (rowAdapters.every((a) => a === null)) return { apply() {}, backward() {}, release() {} };
    if (!this.bank?.matches(this)) {
      this.dropBank();
      this.bank = new LoraBank(this.get(this.names[0]!).gpu, this);
    }
    return this.bank.forRows(rowAdapters);
  }

  private dropBank(): void {
    this.bank?.release();
    this.bank = null;
  }

  release(): void {
    this.dropBank();
    for (const a of this.adapters.values()) a.release();
    this.adapters.clear();
  }
}

// ---- full-parameter mode ----

const LAYER_NAMES: Record<keyof LayerWeights, string> = {
  inputNorm: 'input_layernorm',
  postAttnNorm: 'post_attention_layernorm',
  qNorm: 'self_attn.q_norm',
  kNorm: 'self_attn.k_norm',
  q: 'self_attn.q_proj',
  k: 'self_attn.k_proj',
  v: 'self_attn.v_proj',
  o: 'self_attn.o_proj',
  gate: 'mlp.gate_proj',
  up: 'mlp.up_proj',
  down: 'mlp.down_proj',
};

/** Hugging Face names of every distinct base weight (a tied lm_head is the embedding, listed once). */
export function baseWeightNames(w: Qwen3Weights): { name: string; tensor: Tensor }[] {
  const out = [{ name: 'model.embed_tokens.weight', tensor: w.embed }];
  w.layers.forEach((l, i) => {
    for (const k of Object.keys(LAYER_NAMES) as (keyof LayerWeights)[]) out.push({ name: `model.layers.${i}.${LAYER_NAMES[k]}.weight`, tensor: l[k] });
  });
  out.push({ name: 'model.norm.weight', tensor: w.norm });
  if (w.lmHead !== w.embed) out.push({ name: 'lm_head.weight', tensor: w.lmHead });
  if (out.length !== weightTensors(w).length) throw new LoraError('base weights: a tensor is shared unexpectedly (only a tied lm_head may be)');
  return out;
}

/** Full-parameter training (small models): every base weight with a zeroed f32 gradient buffer. */
export function fullParameters(gpu: Gpu, w: Qwen3Weights): TrainableParam[] {
  return baseWeightNames(w).map(({ name, tensor }) => {
    expectDtype(`full-parameter ${name}`, tensor, 'f32', 'f16');
    return { name, param: tensor, grad: gpu.upload(new Float32Array(tensor.size), tensor.shape, 'f32', `${name}.grad`) };
  });
}
