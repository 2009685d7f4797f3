"""PyTorch (CUDA) baselines for bench/lora-rows.ts: one linear's LoRA delta over a batch whose rows
interleave 3 rank-64 adapters and the base model (row t: adapter t % 4, the 4th is none), Qwen3-0.6B
module shapes, T = 16, 256, 2048, fp32 with TF32 off. Same names, nominal work (x read, y read +
written, each used adapter's A and B read once) and timing (one warm-up round, then the median of 5
repeats of 10 launches, wall clock around synchronize) as troupe, so value ratios are speed ratios.

lora_bank_* times PEFT's mixed-batch forward (LoraLayer._mixed_batch_forward:
per adapter, gather its rows, lora_B(lora_A(x)) * scaling, add back), the PyTorch way to give rows
different adapters; lora_single_* is one adapter over every row (two matmuls).

    python3 bench/torch/bench_lora.py --out torch-lora.json [--filter TEXT]
"""
import argparse
import json
import sys
import time

import torch

REPEATS = 5
LAUNCHES = 10
RANK = 64
ADAPTERS = 3
# [in, out] of the modules bench/lora-rows.ts times (Qwen3-0.6B).
MODULES = {"q_proj": (1024, 2048), "gate_proj": (1024, 3072), "down_proj": (3072, 1024)}


def rand(shape):
    return torch.rand(shape, device="cuda") * 2 - 1


def seconds_per_launch(fn):
    for _ in range(LAUNCHES):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        for _ in range(LAUNCHES):
            fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) / LAUNCHES)
    return sorted(times)[len(times) // 2]


def cases():
    for T in [16, 256, 2048]:
        row_adapter = torch.arange(T, device="cuda") % 4
        # PEFT builds these per forward from adapter_names; precomputed here (the kernels alone are timed).
        sub_batches = [torch.nonzero(row_adapter == a).flatten() for a in range(ADAPTERS)]
        used = sum(1 for s in sub_batches if len(s))
        for m, (n_in, n_out) in MODULES.items():
            x, y = rand((T, n_in)), rand((T, n_out))
            A = [rand((RANK, n_in)) / n_in**0.5 for _ in range(ADAPTERS)]
            B = [rand((n_out, RANK)) * 0.01 for _ in range(ADAPTERS)]
            scaling = 2.0

            def mixed(x=x, y=y, A=A, B=B, sub_batches=sub_batches):
                for a, idx in enumerate(sub_batches):
                    if not len(idx):
                        continue
                    y.index_add_(0, idx, (x[idx] @ A[a].t()) @ B[a].t(), alpha=scaling)

            def single(x=x, y=y, A=A, B=B):
                y.addmm_(x @ A[0].t(), B[0].t(), alpha=scaling)

            work = (T * n_in + 2 * T * n_out + used * RANK * (n_in + n_out)) * 4
            for method, fn in [("bank", mixed), ("single", single)]:
                yield f"lora_{method}_3x_r{RANK}_{m}_T{T}", fn, work


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="JSON file for the rows [{name, value, unit}]")
    ap.add_argument("--filter", default="", help="only names containing this text")
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    rows = []
    with torch.no_grad():
        for name, fn, work in cases():
            if args.filter not in name:
                continue
            value = work / seconds_per_launch(fn) / 1e9
            rows.append({"name": name, "value": value, "unit": "GB/s"})
            print(f"{name:44s} {value:12.1f} GB/s", file=sys.stderr)
    with open(args.out, "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
