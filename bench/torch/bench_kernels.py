"""PyTorch (CUDA) baselines for bench/kernels.ts: the same benchmark names, shapes and timing method
(one warm-up round, then the median of 5 repeats of 10 launches, wall clock around synchronize), and
the same nominal work per name (FLOPs, or bytes read once + written once for memory-bound ops), so
the ratio of values is the ratio of times.

fp32 matmuls run with TF32 off. `matmul_f16w_*` (troupe: f32 activations x f16 weights, f32 accumulate)
has no mixed-dtype counterpart in PyTorch: its baseline runs both operands in fp16 on tensor cores.
`matmul_bf16w_*` rows are the same in bf16, for reference only (troupe has no such rows).

    python3 bench/torch/bench_kernels.py --out bench/torch/kernels.json [--filter TEXT]
"""
import argparse
import json
import re
import sys
import time

import torch
import torch.nn.functional as F

REPEATS = 5
LAUNCHES = 10

# Qwen3-0.6B linear layers [N = out, K = in]; mirrors LINEARS in bench/kernels.ts.
LINEARS = [(2048, 1024), (1024, 1024), (1024, 2048), (3072, 1024), (1024, 3072)]
VOCAB = 151936


def names():
    """The full (non-quick) list of bench/kernels.ts kernelCases(false), without its per-variant rows."""
    out = ["matmul_f32_4096x4096x4096"]
    for w in ["f32", "f16w"]:
        for m in [64, 256, 512, 2048, 8192]:
            out += [f"matmul_{w}_xWt_{m}x{n}x{k}" for n, k in LINEARS]
        out.append(f"matmul_{w}_xWt_256x{VOCAB}x1024")
        out.append(f"matmul_{w}_xWt_2048x{VOCAB}x1024")
        for m in [1, 16]:
            out += [f"matmul_{w}_xWt_{m}x{n}x{k}" for n, k in LINEARS]
            out.append(f"matmul_{w}_xWt_{m}x{VOCAB}x1024")
    out += ["matmul_f32_2048x1024x3072", "matmul_f32_AtB_3072x1024x2048", "matmul_f32_AtB_1024x3072x2048"]
    out += ["matmul_f32_xWt_8192x16x1024", "matmul_f32_xWt_8192x1024x16"]
    out += ["matmul_f32_AtB_16x1024x8192", "matmul_f32_AtB_1024x16x8192"]
    for rows, n in [(4096, 1024), (256, VOCAB)]:
        out += [f"softmax_f32_{rows}x{n}", f"softmax_backward_f32_{rows}x{n}"]
    n = 1 << 24
    out += [f"add_f32_{n}", "reduce_sumsq_f32_8192x1024", "transpose_f32_4096x4096", f"cast_bf16_f32_{n}", f"cast_f32_f16_{n}"]
    # reference only: bf16 tensor-core counterparts of the f16w rows
    out += [x.replace("_f16w_", "_bf16w_") for x in out if "_f16w_" in x]
    # the baselines of troupe's tensor-core rows (matmul_tc*_...): 4096^3 and the backward's dx = dy·W
    out += ["matmul_bf16w_xWt_4096x4096x4096", "matmul_bf16w_8192x1024x3072", "matmul_bf16w_8192x3072x1024", "matmul_bf16w_8192x1024x2048"]
    return out


def rand(shape, dtype=torch.float32):
    return (torch.rand(shape, device="cuda", dtype=torch.float32) * 2 - 1).to(dtype)


def case(name):
    """(launch function, work per launch, unit) for a benchmark name."""
    m = re.fullmatch(r"matmul_(f32|f16w|bf16w)_(?:(xWt|AtB)_)?(\d+)x(\d+)x(\d+)", name)
    if m:
        w, layout, M, N, K = m.group(1), m.group(2) or "AB", int(m.group(3)), int(m.group(4)), int(m.group(5))
        dt = {"f32": torch.float32, "f16w": torch.float16, "bf16w": torch.bfloat16}[w]
        decode = M <= 16
        work = M * K * 4 + N * K * (4 if w == "f32" else 2) + M * N * 4 if decode else 2 * M * N * K
        unit = "GB/s" if decode else "GFLOP/s"
        if layout == "xWt":
            x, W = rand((M, K), dt), rand((N, K), dt)
            return (lambda: F.linear(x, W)), work, unit
        out = torch.empty((M, N), device="cuda", dtype=dt)
        if layout == "AtB":
            a, b = rand((K, M), dt), rand((K, N), dt)
            return (lambda: torch.matmul(a.t(), b, out=out)), work, unit
        a, b = rand((M, K), dt), rand((K, N), dt)
        return (lambda: torch.matmul(a, b, out=out)), work, unit
    m = re.fullmatch(r"softmax(_backward)?_f32_(\d+)x(\d+)", name)
    if m:
        rows, n = int(m.group(2)), int(m.group(3))
        if m.group(1):
            y, dy = torch.softmax(rand((rows, n)), -1), rand((rows, n))
            return (lambda: torch._softmax_backward_data(dy, y, -1, torch.float32)), 3 * rows * n * 4, "GB/s"
        x = rand((rows, n))
        return (lambda: torch.softmax(x, -1)), 2 * rows * n * 4, "GB/s"
    m = re.fullmatch(r"add_f32_(\d+)", name)
    if m:
        n = int(m.group(1))
        a, b, out = rand((n,)), rand((n,)), torch.empty(n, device="cuda")
        return (lambda: torch.add(a, b, out=out)), 3 * n * 4, "GB/s"
    m = re.fullmatch(r"reduce_sumsq_f32_(\d+)x(\d+)", name)
    if m:
        rows, n = int(m.group(1)), int(m.group(2))
        x = rand((rows, n))
        # one pass over x (a fused norm), as the troupe kernel; the square root is negligible
        return (lambda: torch.linalg.vector_norm(x, 2, -1)), rows * n * 4 + rows * 4, "GB/s"
    m = re.fullmatch(r"transpose_f32_(\d+)x(\d+)", name)
    if m:
        r, c = int(m.group(1)), int(m.group(2))
        x, out = rand((r, c)), torch.empty((c, r), device="cuda")
        return (lambda: out.copy_(x.t())), 2 * r * c * 4, "GB/s"
    m = re.fullmatch(r"cast_(bf16_f32|f32_f16)_(\d+)", name)
    if m:
        n = int(m.group(2))
        if m.group(1) == "bf16_f32":
            x, out = rand((n,), torch.bfloat16), torch.empty(n, device="cuda")
        else:
            x, out = rand((n,)), torch.empty(n, device="cuda", dtype=torch.float16)
        return (lambda: out.copy_(x)), n * 6, "GB/s"
    raise ValueError(f"bench_kernels.py: no PyTorch counterpart for benchmark {name}")


def seconds_per_launch(fn):
    """Wall clock around synchronize, as troupe times around gpu.sync(): small kernels pay launch and
    sync overhead on both sides alike (CUDA events would time the GPU alone)."""
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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="JSON file for the rows [{name, value, unit}]")
    ap.add_argument("--filter", default="", help="only names containing this text")
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    rows = []
    for name in names():
        if args.filter not in name:
            continue
        fn, work, unit = case(name)
        value = work / seconds_per_launch(fn) / 1e9
        rows.append({"name": name, "value": value, "unit": unit})
        print(f"{name:44s} {value:12.1f} {unit}", file=sys.stderr)
        del fn
        torch.cuda.empty_cache()
    with open(args.out, "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
