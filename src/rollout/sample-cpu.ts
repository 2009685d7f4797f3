// A seeded CPU sampler for one row of logits: greedy (argmax, first index on ties like torch.argmax) or
// temperature + top-p (nucleus, as Hugging Face's TopPLogitsWarper: keep the most probable tokens whose
// cumulative probability reaches top_p, at least one) + optional top-k. The batched GPU sampler is the
// rollout engine's; this one serves the CLI and tests.

export interface SamplingOptions {
  /** argmax; ignores temperature/topP/topK. */
  greedy?: boolean;
  temperature?: number; // default 1
  topP?: number; // default 1 (no nucleus cut)
  topK?: number; // default 0 (no top-k cut)
  seed?: number; // default 0
}

export class SamplingError extends Error {
  override name = 'SamplingError';
}

export function argmax(logits: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < logits.length; i++) if (logits[i]! > logits[best]!) best = i;
  return best;
}

export class CpuSampler {
  private state: number;
  readonly greedy: boolean;
  readonly temperature: number;
  readonly topP: number;
  readonly topK: number;

  constructor(opts: SamplingOptions = {}) {
    this.greedy = opts.greedy ?? false;
    this.temperature = opts.temperature ?? 1;
    this.topP = opts.topP ?? 1;
    this.topK = opts.topK ?? 0;
    this.state = (opts.seed ?? 0) >>> 0;
    if (!this.greedy && !(this.temperature > 0 && Number.isFinite(this.temperature))) {
      throw new SamplingError(`sampler: temperature must be positive (use greedy for argmax), got ${this.temperature}`);
    }
    if (!(this.topP > 0 && this.topP <= 1)) throw new SamplingError(`sampler: top_p must be in (0, 1], got ${this.topP}`);
    if (!Number.isInteger(this.topK) || this.topK < 0) throw new SamplingError(`sampler: top_k must be a non-negative integer, got ${this.topK}`);
  }

  /** mulberry32 in [0, 1). */
  private uniform(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** A token id drawn from one row of logits. */
  sample(logits: ArrayLike<number>): number {
    if (logits.length === 0) throw new SamplingError('sampler: empty logits row');
    if (this.greedy) return argmax(logits);
    const V = logits.length;
    let m = -Infinity;
    for (let i = 0; i < V; i++) m = Math.max(m, logits[i]! / this.temperature);
    const p = new Float64Array(V);
    let sum = 0;
    for (let i = 0; i < V; i++) sum += p[i] = Math.exp(logits[i]! / this.temperature - m);
    // Candidates by descending probability (ties by index), cut by top-k and then top-p.
    let order = Array.from({ length: V }, (_, i) => i).sort((a, b) => p[b]! - p[a]! || a - b);
    if (this.topK > 0) order = order.slice(0, this.topK);
    let keep = order.length;
    if (this.topP < 1) {
      let cum = 0;
      for (let k = 0; k < order.length; k++) {
        cum += p[order[k]!]! / sum;
        if (cum >= this.topP) {
          keep = k + 1;
          break;
        }
      }
    }
    let mass = 0;
    for (let k = 0; k < keep; k++) mass += p[order[k]!]!;
    let u = this.uniform() * mass;
    for (let k = 0; k < keep; k++) {
      u -= p[order[k]!]!;
      if (u < 0) return order[k]!;
    }
    return order[keep - 1]!;
  }
}
