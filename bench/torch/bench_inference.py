"""PyTorch (CUDA) baselines for bench/inference.ts: transformers Qwen3ForCausalLM with random weights of a
Qwen3 shape built from a config (no download), bf16, attn_implementation="sdpa"; the same names, shapes and
timing (one warm-up call, then the median of 5 calls; 10 for decode), so the ratio of values is the ratio of times.

- inference_prefill_SxL: model(ids [S, L], use_cache=True, logits_to_keep=1): fills a DynamicCache and
  computes the logits of each last token only (troupe: packed prefill into its paged cache, lastOnly).
- inference_decode_bS_ctxC: one step model(ids [S, 1], past_key_values=cache) with C-1 tokens cached per
  sequence (the cache is cropped back after each step, so every step is the same); logits stay on the GPU.
Names end in _f16 like troupe's f16 rows (troupe stores weights in f16; the baseline runs bf16).

    python3 bench/torch/bench_inference.py --out bench/torch/inference.json [--preset Qwen3-0.6B] [--filter TEXT]
"""
import argparse
import json
import sys
import time

import torch
from transformers import Qwen3Config, Qwen3ForCausalLM

PRESETS = {
    "Qwen3-0.6B": dict(hidden_size=1024, intermediate_size=3072, num_hidden_layers=28, num_attention_heads=16),
    "Qwen3-1.7B": dict(hidden_size=2048, intermediate_size=6144, num_hidden_layers=28, num_attention_heads=16),
    "Qwen3-4B": dict(hidden_size=2560, intermediate_size=9728, num_hidden_layers=36, num_attention_heads=32),
}
PREFILL = [(8, 1024), (1, 512)]
DECODE = [1, 256]
CONTEXT = 1024
REPEATS = 5


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
    return model.eval(), config


def median_seconds(fn, repeats):
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="JSON file for the rows [{name, value, unit}]")
    ap.add_argument("--preset", default="Qwen3-0.6B", choices=sorted(PRESETS))
    ap.add_argument("--filter", default="", help="only names containing this text")
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    model, config = build(args.preset)
    tag = f"{args.preset.lower()}_f16"
    rows = []

    def emit(name, value):
        rows.append({"name": name, "value": value, "unit": "tokens/s"})
        print(f"{name:48s} {value:12.1f} tokens/s", file=sys.stderr)

    with torch.inference_mode():
        for S, L in PREFILL:
            name = f"inference_prefill_{S}x{L}_{tag}"
            if args.filter not in name:
                continue
            ids = torch.randint(0, config.vocab_size, (S, L), device="cuda")
            emit(name, S * L / median_seconds(lambda: model(input_ids=ids, use_cache=True, logits_to_keep=1), REPEATS))
        for S in DECODE:
            name = f"inference_decode_b{S}_ctx{CONTEXT}_{tag}"
            if args.filter not in name:
                continue
            ids = torch.randint(0, config.vocab_size, (S, CONTEXT - 1), device="cuda")
            cache = model(input_ids=ids, use_cache=True, logits_to_keep=1).past_key_values
            step_ids = torch.randint(0, config.vocab_size, (S, 1), device="cuda")

            def step():
                model(input_ids=step_ids, past_key_values=cache, use_cache=True)
                cache.crop(CONTEXT - 1)

            emit(name, S / median_seconds(step, REPEATS * 2))
            del cache
            torch.cuda.empty_cache()
    with open(args.out, "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
