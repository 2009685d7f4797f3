"""PyTorch (CUDA) baseline for bench/training.ts: one LoRA training step of transformers Qwen3ForCausalLM with
random weights of a Qwen3 shape built from a config (no download), bf16, attn_implementation="sdpa", PEFT LoRA
r64 / alpha 32 on all seven linear modules, 8 sequences x 1024 tokens, mean next-token NLL (labels = ids),
backward, torch.optim.AdamW on the LoRA weights. Same names and timing as troupe (one warm-up step, then the
median of 3 steps, wall clock around torch.cuda.synchronize()):

- training_lora_r64_8x1024_<preset>_f16_tok_per_s: 8192 tokens / step time
- ..._peak_memory: torch.cuda.max_memory_allocated() over a timed step, GiB (weights included, like troupe's pool)
- ..._largest_activation: the largest tensor storage an op of one step creates, MiB (recorded with a
  TorchDispatchMode on an extra, untimed step); ..._largest_buffer: that or the largest parameter, whichever
  is larger (troupe's counts every GPU buffer, weights included)
Names end in _f16 like troupe's f16 rows (troupe stores weights in f16; the baseline runs bf16). No gradient
checkpointing (troupe recomputes each layer in the backward, so its peak memory is lower by design).

    python3 bench/torch/bench_training.py --out bench/torch/training.json [--preset Qwen3-0.6B] [--filter TEXT]
"""
import argparse
import json
import sys
import time

import torch
from peft import LoraConfig, get_peft_model
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from transformers import Qwen3Config, Qwen3ForCausalLM

PRESETS = {
    "Qwen3-0.6B": dict(hidden_size=1024, intermediate_size=3072, num_hidden_layers=28, num_attention_heads=16),
    "Qwen3-1.7B": dict(hidden_size=2048, intermediate_size=6144, num_hidden_layers=28, num_attention_heads=16),
    "Qwen3-4B": dict(hidden_size=2560, intermediate_size=9728, num_hidden_layers=36, num_attention_heads=32),
}
SEQS, LEN = 8, 1024
RANK, ALPHA = 64, 32
REPEATS = 3
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def build(preset):
    common = dict(num_key_value_heads=8, head_dim=128, vocab_size=151936, tie_word_embeddings=True, rms_norm_eps=1e-6,
                  max_position_embeddings=40960, attn_implementation="sdpa")
    try:
        config = Qwen3Config(**PRESETS[preset], **common, rope_parameters={"rope_type": "default", "rope_theta": 1e6})
    except TypeError:
        config = Qwen3Config(**PRESETS[preset], **common, rope_theta=1e6)
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = Qwen3ForCausalLM(config).to(torch.bfloat16)
    lora = LoraConfig(r=RANK, lora_alpha=ALPHA, target_modules=TARGETS, lora_dropout=0.0, bias="none", task_type="CAUSAL_LM")
    model = get_peft_model(model, lora)
    # troupe keeps LoRA weights (and their gradients and moments) in f32.
    for n, p in model.named_parameters():
        if p.requires_grad:
            p.data = p.data.float()
    return model.train(), config


class LargestTensor(TorchDispatchMode):
    """The largest storage (bytes) among the outputs of every op run under it."""

    def __init__(self):
        super().__init__()
        self.bytes = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor) and t.device.type == "cuda":
                self.bytes = max(self.bytes, t.untyped_storage().nbytes())
        return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="JSON file for the rows [{name, value, unit}]")
    ap.add_argument("--preset", default="Qwen3-0.6B", choices=sorted(PRESETS))
    ap.add_argument("--filter", default="", help="only names containing this text")
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    model, config = build(args.preset)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5, weight_decay=0.01)
    ids = torch.randint(0, config.vocab_size, (SEQS, LEN), device="cuda")
    prefix = f"training_lora_r{RANK}_{SEQS}x{LEN}_{args.preset.lower()}_f16"

    def step():
        opt.zero_grad(set_to_none=True)
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], 1.0)
        opt.step()

    step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    times.sort()
    sec = times[len(times) // 2]
    peak = torch.cuda.max_memory_allocated() / 2**30
    largest = LargestTensor()
    with largest:
        step()
    torch.cuda.synchronize()
    max_param = max(p.untyped_storage().nbytes() for p in model.parameters())
    rows = []
    for name, value, unit in [
        ("tok_per_s", SEQS * LEN / sec, "tokens/s"),
        ("peak_memory", peak, "GiB"),
        ("largest_buffer", max(largest.bytes, max_param) / 2**20, "MiB"),
        ("largest_activation", largest.bytes / 2**20, "MiB"),
    ]:
        full = f"{prefix}_{name}"
        if args.filter in full:
            rows.append({"name": full, "value": value, "unit": unit})
            print(f"{full:64s} {value:12.2f} {unit}", file=sys.stderr)
    with open(args.out, "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
