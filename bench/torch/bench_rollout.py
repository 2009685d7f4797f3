"""Baseline for bench/rollout.ts: transformers generate (bf16, sdpa, batched, left-padded) on random
weights of a Qwen3 shape: P prompts x n samples of mixed prompt lengths, N new tokens each (EOS ignored),
temperature 0.7. Writes JSON rows {name, value, unit} to --out with the same names as troupe's rows.

    python3 bench/torch/bench_rollout.py --out rollout-torch.json [--quick]
"""
import argparse
import json
import time

import torch
from transformers import Qwen3Config, Qwen3ForCausalLM

PRESET = dict(vocab_size=151936, hidden_size=1024, intermediate_size=3072, num_hidden_layers=28, num_attention_heads=16,
              num_key_value_heads=8, head_dim=128, tie_word_embeddings=True, rope_theta=1e6, max_position_embeddings=40960)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    prompts, samples, new, lens = (2, 2, 4, [5, 9]) if args.quick else (32, 8, 128, [96, 160, 256, 400])
    cfg = Qwen3Config(**PRESET, rms_norm_eps=1e-6, pad_token_id=0, eos_token_id=None, bos_token_id=None)
    torch.manual_seed(0)
    model = Qwen3ForCausalLM(cfg).to("cuda", torch.bfloat16).eval()
    model.config._attn_implementation = "sdpa"
    g = torch.Generator().manual_seed(1)
    batch = []
    for p in range(prompts):
        ids = torch.randint(1, cfg.vocab_size, (lens[p % len(lens)],), generator=g).tolist()
        batch += [ids] * samples
    width = max(len(b) for b in batch)
    input_ids = torch.tensor([[0] * (width - len(b)) + b for b in batch], device="cuda")
    mask = torch.tensor([[0] * (width - len(b)) + [1] * len(b) for b in batch], device="cuda")
    kw = dict(max_new_tokens=new, min_new_tokens=new, do_sample=True, temperature=0.7, top_p=1.0, pad_token_id=0)
    with torch.no_grad():
        model.generate(input_ids=input_ids[:2], attention_mask=mask[:2], **kw)
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        t0 = time.perf_counter()
        out = model.generate(input_ids=input_ids, attention_mask=mask, **kw)
        torch.cuda.synchronize()
        seconds = time.perf_counter() - t0
    tokens = (out.shape[1] - width) * out.shape[0]
    seqs = prompts * samples
    tag = "tiny" if args.quick else "qwen3-0.6b"
    rows = [
        {"name": f"rollout_{tag}_{seqs}seq_{new}new_tok_per_s", "value": tokens / seconds, "unit": "tok/s"},
        {"name": f"rollout_{tag}_{seqs}seq_peak_memory", "value": torch.cuda.max_memory_allocated() / 2**30, "unit": "GiB"},
    ]
    json.dump(rows, open(args.out, "w"), indent=1)
    for r in rows:
        print(f"{r['name']}: {r['value']:.1f} {r['unit']}")


if __name__ == "__main__":
    main()
