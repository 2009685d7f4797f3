// The hook through which LoRA (or any low-rank delta) joins each linear layer of the model.
// The forward pass calls `apply` right after the base product y = x·Wᵀ; per-row adapters (one per
// role under isolated policies, none for frozen roles) are the implementation's business.
import type { Gpu } from '../gpu/gpu.ts';
import type { Tensor } from '../gpu/tensor.ts';

/** The seven linear layers of a Qwen3 decoder layer, named as in Hugging Face / PEFT. */
export const LINEAR_MODULES = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] as const;
export type LinearModule = (typeof LINEAR_MODULES)[number];

export interface LinearAdapter {
  /** y[T, out] += delta(x[T, in]) for this layer and module; no-op when the module has no adapter. */
  apply(gpu: Gpu, layer: number, module: LinearModule, x: Tensor, y: Tensor): void;
}

export class LoraError extends Error {
  override name = 'LoraError';
}
