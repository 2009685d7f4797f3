"""PyTorch (CUDA) baselines for bench/load.ts, same names and units (GB/s; median of 3 after a warm-up).

random_weights_<model>_<dtype>: every Qwen3 weight of the preset made with torch.randn on the GPU
(matrices * 0.02, norms 1 + 0.02 * randn), bytes made per second.
load_bf16_to_<dtype>_Qwen3-0.6B_4L: safetensors.torch.load_file of a bf16 checkpoint with Qwen3-0.6B's
shapes and 4 layers (written first; read from the page cache) onto the GPU, then .to(dtype); file bytes per second.

    python3 bench/torch/bench_load.py --out bench/torch/load.json [--filter TEXT]
"""
import argparse
import json
import os
import sys
import tempfile
import time

import torch
from safetensors.torch import load_file, save_file

RUNS = 3
PRESETS = {  # hidden, intermediate, layers, heads, kv heads (head_dim 128, vocab 151936, tied)
    "Qwen3-0.6B": (1024, 3072, 28, 16, 8),
    "Qwen3-1.7B": (2048, 6144, 28, 16, 8),
    "Qwen3-4B": (2560, 9728, 36, 32, 8),
}
DTYPES = {"f16": torch.float16, "f32": torch.float32}


def shapes(name, layers=None):
    h, inter, n_layers, heads, kv = PRESETS[name]
    d, vocab = 128, 151936
    out = {"model.embed_tokens.weight": (vocab, h)}
    for i in range(layers if layers is not None else n_layers):
        p = f"model.layers.{i}."
        out.update({
            p + "input_layernorm.weight": (h,), p + "post_attention_layernorm.weight": (h,),
            p + "self_attn.q_proj.weight": (heads * d, h), p + "self_attn.k_proj.weight": (kv * d, h),
            p + "self_attn.v_proj.weight": (kv * d, h), p + "self_attn.o_proj.weight": (h, heads * d),
            p + "self_attn.q_norm.weight": (d,), p + "self_attn.k_norm.weight": (d,),
            p + "mlp.gate_proj.weight": (inter, h), p + "mlp.up_proj.weight": (inter, h), p + "mlp.down_proj.weight": (h, inter),
        })
    out["model.norm.weight"] = (h,)
    return out


def median_seconds(fn):
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return sorted(times)[RUNS // 2]


def random_weights(name, dtype):
    sh = shapes(name)

    def make():
        w = {}
        for k, s in sh.items():
            if len(s) == 1:
                w[k] = (1 + 0.02 * torch.randn(s, device="cuda")).float()
            else:
                w[k] = 0.02 * torch.randn(s, device="cuda", dtype=dtype)
        return w

    nbytes = sum((4 if len(s) == 1 else torch.finfo(dtype).bits // 8) * torch.Size(s).numel() for s in sh.values())
    return nbytes / median_seconds(make) / 1e9


def load_bf16(dtype, path, nbytes):
    def load():
        w = load_file(path, device="cuda")
        return {k: (v.float() if v.dim() == 1 else v.to(dtype)) for k, v in w.items()}

    return nbytes / median_seconds(load) / 1e9


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="JSON file for the rows [{name, value, unit}]")
    ap.add_argument("--filter", default="", help="only names containing this text")
    args = ap.parse_args()
    rows = []

    def emit(name, value):
        rows.append({"name": name, "value": value, "unit": "GB/s"})
        print(f"{name:44s} {value:10.2f} GB/s", file=sys.stderr)

    for name in PRESETS:
        for d, dtype in DTYPES.items():
            row = f"random_weights_{name}_{d}"
            if args.filter in row:
                emit(row, random_weights(name, dtype))
                torch.cuda.empty_cache()
    wanted = [(d, f"load_bf16_to_{d}_Qwen3-0.6B_4L") for d in DTYPES]
    wanted = [(d, r) for d, r in wanted if args.filter in r]
    if wanted:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "model.safetensors")
            gen = torch.Generator().manual_seed(0)
            save_file({k: (0.02 * torch.randn(s, generator=gen)).to(torch.bfloat16) for k, s in shapes("Qwen3-0.6B", 4).items()}, path)
            nbytes = os.path.getsize(path)
            for d, row in wanted:
                emit(row, load_bf16(DTYPES[d], path, nbytes))
    with open(args.out, "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
