// AdamW on the GPU with torch semantics (shaders/adamw.wgsl) over one parameter group (one adapter, or
// the base weights): global gradient norm (shaders/grad_norm.wgsl: sums of squares reduced on the GPU,
// one read back), clipping to maxGradNorm like torch.nn.utils.clip_grad_norm_ (grads scaled by
// min(1, max / (norm + 1e-6))), the step skipped and counted when the norm is not finite, and the
// optimizer state saved to / loaded from safetensors.
import type { Gpu } from '../gpu/gpu.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { Uniforms } from '../gpu/uniforms.ts';
import { expectDtype, ShapeError } from '../kernels/check.ts';
import { ceilDiv, grid1d } from '../kernels/grid.ts';
import type { TrainableParam } from '../model/lora.ts';
import { readSafetensorsBytes, writeSafetensors, type TensorData } from '../model/safetensors.ts';

export interface AdamWOptions {
  lr?: number; // 2e-5 (the schedule usually passes each step's lr to step())
  beta1?: number; // 0.9
  beta2?: number; // 0.999
  eps?: number; // 1e-8
  weightDecay?: number; // 0.01
  /** Clip the global gradient norm to this (1.0); null: no clipping (the norm is still computed). */
  maxGradNorm?: number | null;
}

export interface StepResult {
  /** Global L2 norm of the gradients before clipping. */
  gradNorm: number;
  /** Factor the gradients were scaled by (1 when not clipped). */
  clipCoef: number;
  /** True when the norm was not finite: no update, gradients zeroed. */
  skipped: boolean;
  /** Optimizer steps taken so far (skipped ones excluded). */
  step: number;
  lr: number;
}

export class OptimizerError extends Error {
  override name = 'OptimizerError';
}

interface Slot extends TrainableParam {
  m: Tensor;
  v: Tensor;
}

/** Workgroups per tensor in the sum of squares: fixed by the size, so the reduction order is too. */
function partialsFor(n: number): number {
  return Math.min(256, ceilDiv(n, 256));
}

const STATE_FORMAT = 'troupe-adamw-1';

export class AdamW {
  readonly lr: number;
  readonly beta1: number;
  readonly beta2: number;
  readonly eps: number;
  readonly weightDecay: number;
  readonly maxGradNorm: number | null;
  private readonly slots: Slot[];
  private steps = 0;
  private skippedSteps = 0;

  constructor(
    readonly gpu: Gpu,
    params: readonly TrainableParam[],
    opts: AdamWOptions = {},
    /** For messages and saved state (e.g. the adapter's name). */
    readonly name = 'adamw',
  ) {
    this.lr = opts.lr ?? 2e-5;
    this.beta1 = opts.beta1 ?? 0.9;
    this.beta2 = opts.beta2 ?? 0.999;
    this.eps = opts.eps ?? 1e-8;
    this.weightDecay = opts.weightDecay ?? 0.01;
    this.maxGradNorm = opts.maxGradNorm === undefined ? 1.0 : opts.maxGradNorm;
    for (const [k, v] of [['beta1', this.beta1], ['beta2', this.beta2]] as const) {
      if (!(v >= 0 && v < 1)) throw new OptimizerError(`${name}: ${k} must be in [0, 1), got ${v}`);
    }
    if (!(this.eps > 0) || !(this.weightDecay >= 0) || !(this.lr >= 0)) throw new OptimizerError(`${name}: lr, eps, weightDecay must be >= 0 (eps > 0)`);
    if (this.maxGradNorm !== null && !(this.maxGradNorm > 0)) throw new OptimizerError(`${name}: maxGradNorm must be > 0 or null, got ${this.maxGradNorm}`);
    if (!params.length) throw new OptimizerError(`${name}: no parameters`);
    const names = new Set<string>();
    this.slots = params.map((p) => {
      if (names.has(p.name)) throw new OptimizerError(`${name}: parameter ${p.name} listed twice`);
      names.add(p.name);
      expectDtype(`${name} ${p.name}`, p.param, 'f32', 'f16');
      expectDtype(`${name} ${p.name}`, p.grad, 'f32');
      if (p.param.size !== p.grad.size) throw new ShapeError(`${name}: ${p.grad.label} has ${p.grad.size} elements, ${p.param.label} ${p.param.size}`);
      const zeros = new Float32Array(p.param.size);
      return { ...p, m: gpu.upload(zeros, p.param.shape, 'f32', `${p.name}.exp_avg`), v: gpu.upload(zeros, p.param.shape, 'f32', `${p.name}.exp_avg_sq`) };
    });
  }

  /** Optimizer steps taken (not counting skipped ones). */
  get stepCount(): number {
    return this.steps;
  }

  /** Steps skipped because the gradient norm was not finite. */
  get skipped(): number {
    return this.skippedSteps;
  }

  get parameters(): readonly TrainableParam[] {
    return this.slots;
  }

  /** Records the global sum of squares of all gradients into a [1] tensor (no read). */
  sumOfSquares(): Tensor {
    const gpu = this.gpu;
    const total = this.slots.reduce((a, s) => a + partialsFor(s.grad.size), 0);
    const partials = gpu.tensor([total], 'f32', `${this.name}.grad_norm.partials`);
    const out = gpu.tensor([1], 'f32', `${this.name}.grad_norm.sumsq`);
    let offset = 0;
    for (const s of this.slots) {
      const wg = partialsFor(s.grad.size);
      gpu.dispatch({
        shader: 'grad_norm',
        entry: 'partial_sumsq',
        uniforms: new Uniforms().u32(s.grad.size).u32(offset).u32(0).u32(0),
        bindings: [s.grad, partials, null],
        workgroups: [wg],
        label: 'grad_norm.partial',
      });
      offset += wg;
    }
    gpu.dispatch({
      shader: 'grad_norm',
      entry: 'total_sumsq',
      uniforms: new Uniforms().u32(0).u32(0).u32(total).u32(0),
      bindings: [null, partials, out],
      workgroups: [1],
      label: 'grad_norm.total',
    });
    partials.release();
    return out;
  }

  /** The global L2 norm of the gradients (one read back). */
  async gradNorm(): Promise<number> {
    const t = this.sumOfSquares();
    const v = (await this.gpu.readF32(t))[0]!;
    t.release();
    return Math.sqrt(v);
  }

  /** Zeroes every gradient. */
  zeroGrad(): void {
    for (const s of this.slots) this.gpu.write(s.grad, new Float32Array(s.grad.size));
  }

  /** Clips and applies the accumulated gradients, then zeroes them. */
  async step(lr = this.lr): Promise<StepResult> {
    if (!(lr >= 0)) throw new OptimizerError(`${this.name}: lr must be >= 0, got ${lr}`);
    const gradNorm = await this.gradNorm();
    if (!Number.isFinite(gradNorm)) {
      this.skippedSteps++;
      this.zeroGrad();
      return { gradNorm, clipCoef: 0, skipped: true, step: this.steps, lr };
    }
    const clipCoef = this.maxGradNorm === null ? 1 : Math.min(1, this.maxGradNorm / (gradNorm + 1e-6));
    this.steps++;
    const t = this.steps;
    const uniforms = (n: number) =>
      new Uniforms()
        .u32(n)
        .u32(1)
        .f32(lr)
        .f32(this.beta1)
        .f32(this.beta2)
        .f32(this.eps)
        .f32(this.weightDecay)
        .f32(1 - this.beta1 ** t)
        .f32(Math.sqrt(1 - this.beta2 ** t))
        .f32(clipCoef);
    for (const s of this.slots) {
      this.gpu.dispatch({
        shader: 'adamw',
        entry: 'step',
        variant: { aliases: { P: s.param.dtype } },
        uniforms: uniforms(s.param.size),
        bindings: [s.param, s.grad, s.m, s.v],
        workgroups: grid1d(ceilDiv(s.param.size, 256)),
        label: 'adamw',
      });
    }
    // Adapters bump their version: the rollout engine's bank re-syncs, its prefix cache stops matching.
    for (const owner of new Set(this.slots.map((s) => s.owner))) owner?.markUpdated();
    return { gradNorm, clipCoef, skipped: false, step: t, lr };
  }

  /** The moments and counters as a safetensors file: `<param>.exp_avg`, `<param>.exp_avg_sq` (F32). */
  async saveState(): Promise<Uint8Array> {
    const tensors: TensorData[] = [];
    for (const s of this.slots) {
      tensors.push({ name: `${s.name}.exp_avg`, dtype: 'F32', shape: s.param.shape, data: await this.gpu.readF32(s.m) });
      tensors.push({ name: `${s.name}.exp_avg_sq`, dtype: 'F32', shape: s.param.shape, data: await this.gpu.readF32(s.v) });
    }
    return writeSafetensors(tensors, {
      format: STATE_FORMAT,
      name: this.name,
      step: String(this.steps),
      skipped: String(this.skippedSteps),
      betas: JSON.stringify([this.beta1, this.beta2]),
      eps: String(this.eps),
      weight_decay: String(this.weightDecay),
    });
  }

  /** Restores state saved by saveState for the same parameters (names and shapes must match). */
  loadState(bytes: Uint8Array, file = `${this.name} optimizer state`): void {
    const { tensors, metadata } = readSafetensorsBytes(bytes, file);
    if (metadata.format !== STATE_FORMAT) throw new OptimizerError(`${file}: not a troupe AdamW state (format ${metadata.format ?? 'missing'})`);
    const step = Number(metadata.step);
    const skipped = Number(metadata.skipped ?? 0);
    if (!Number.isInteger(step) || step < 0 || !Number.isInteger(skipped) || skipped < 0) throw new OptimizerError(`${file}: bad step count ${metadata.step}`);
    const expected = new Set(this.slots.flatMap((s) => [`${s.name}.exp_avg`, `${s.name}.exp_avg_sq`]));
    const extra = [...tensors.keys()].filter((k) => !expected.has(k));
    if (extra.length) throw new OptimizerError(`${file}: tensors for parameters this optimizer does not have: ${extra.slice(0, 5).join(', ')}`);
    const values: [Tensor, Float32Array][] = [];
    for (const s of this.slots) {
      for (const [key, t] of [[`${s.name}.exp_avg`, s.m], [`${s.name}.exp_avg_sq`, s.v]] as const) {
        const e = tensors.get(key);
        if (!e) throw new OptimizerError(`${file}: missing tensor ${key}`);
        if (e.dtype !== 'F32' || e.shape.length !== t.shape.length || e.shape.some((d, i) => d !== t.shape[i])) {
          throw new OptimizerError(`${file}: tensor ${key} is ${e.dtype} [${e.shape}], expected F32 [${t.shape}]`);
        }
        values.push([t, e.values as Float32Array]);
      }
    }
    for (const [t, v] of values) this.gpu.write(t, v);
    this.steps = step;
    this.skippedSteps = skipped;
  }

  release(): void {
    for (const s of this.slots) {
      s.m.release();
      s.v.release();
    }
  }
}
