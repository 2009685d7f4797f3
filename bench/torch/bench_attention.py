"""PyTorch (CUDA) baselines for bench/attention.ts: the same names, shapes, nominal work and timing method
(one warm-up round, then the median of 5 repeats of 10 launches; CUDA events), so the ratio of values is
the ratio of times. Qwen3-0.6B: 16 heads, 8 kv heads, head dim 128 (GQA through enable_gqa).

- attention_prefill/backward_f32: F.scaled_dot_product_attention, causal, fp32 (TF32 off; the
  memory-efficient kernel), 8 sequences of 1024 as a batch (troupe packs them along T).
- attention_decode_f16cache / paged_prefill_f16cache: sdpa in fp16 over contiguous K/V (flash kernel;
  no paging): an upper bound for a paged kernel. kv_write: index_copy_ of f32 rows cast to fp16.
- Rows ending _bf16 are the flash (tensor-core) prefill/backward, for reference only.

    python3 bench/torch/bench_attention.py --out bench/torch/attention.json [--filter TEXT]
"""
import argparse
import json
import sys

import torch
import torch.nn.functional as F

REPEATS = 5
LAUNCHES = 10
H, KV, D = 16, 8, 128
SEQS, LEN = 8, 1024
DEC_SEQS, DEC_LEN = 256, 1024
TAG = f"h{H}kv{KV}d{D}"


def seconds_per_launch(fn):
    for _ in range(LAUNCHES):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(REPEATS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(LAUNCHES):
            fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1000 / LAUNCHES)
    times.sort()
    return times[len(times) // 2]


def rand(*shape, dtype=torch.float32, grad=False):
    return (torch.rand(shape, device="cuda") * 2 - 1).to(dtype).requires_grad_(grad)


def cases():
    pairs = LEN * (LEN + 1) / 2
    flops = 4 * D * H * SEQS * pairs
    for dt, suffix in [(torch.float32, ""), (torch.bfloat16, "_bf16")]:
        q, k, v = rand(SEQS, H, LEN, D, dtype=dt, grad=True), rand(SEQS, KV, LEN, D, dtype=dt, grad=True), rand(SEQS, KV, LEN, D, dtype=dt, grad=True)
        dO = rand(SEQS, H, LEN, D, dtype=dt)
        sdpa = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        yield f"attention_prefill_f32_{SEQS}x{LEN}_{TAG}{suffix}", (lambda: sdpa().detach()), flops, "GFLOP/s"
        out = sdpa()
        yield f"attention_backward_f32_{SEQS}x{LEN}_{TAG}{suffix}", (lambda: torch.autograd.grad(out, (q, k, v), dO, retain_graph=True)), 2.5 * flops, "GFLOP/s"

    half = torch.float16
    q = rand(DEC_SEQS, H, 1, D, dtype=half)
    k, v = rand(DEC_SEQS, KV, DEC_LEN, D, dtype=half), rand(DEC_SEQS, KV, DEC_LEN, D, dtype=half)
    dec = lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    name = f"attention_decode_f16cache_{DEC_SEQS}x{DEC_LEN}_{TAG}"
    yield name, dec, 4 * D * H * DEC_SEQS * DEC_LEN, "GFLOP/s"
    yield name + "_kvread", dec, 2 * DEC_SEQS * DEC_LEN * KV * D * 2, "GB/s"

    qp = rand(SEQS, H, LEN, D, dtype=half)
    kp, vp = rand(SEQS, KV, LEN, D, dtype=half), rand(SEQS, KV, LEN, D, dtype=half)
    yield f"attention_paged_prefill_f16cache_{SEQS}x{LEN}_{TAG}", (lambda: F.scaled_dot_product_attention(qp, kp, vp, is_causal=True, enable_gqa=True)), flops, "GFLOP/s"

    cache = torch.zeros(DEC_SEQS * DEC_LEN, KV * D, device="cuda", dtype=half)
    slots = torch.randperm(DEC_SEQS * DEC_LEN, device="cuda")[:DEC_SEQS]
    new = rand(DEC_SEQS, KV * D)
    n = DEC_SEQS * KV * D
    yield f"kv_write_f16cache_{DEC_SEQS}x{KV}x{D}", (lambda: (cache.index_copy_(0, slots, new.half()), cache.index_copy_(0, slots, new.half()))), 2 * n * (4 + 2) + DEC_SEQS * 4, "GB/s"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="JSON file for the rows [{name, value, unit}]")
    ap.add_argument("--filter", default="", help="only names containing this text")
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    rows = []
    for name, fn, work, unit in cases():
        if args.filter not in name:
            continue
        try:
            value = work / seconds_per_launch(fn) / 1e9
        except RuntimeError as e:  # a backend that refuses a shape: report it and go on
            print(f"{name}: failed: {e}", file=sys.stderr)
            continue
        rows.append({"name": name, "value": value, "unit": unit})
        print(f"{name:56s} {value:12.1f} {unit}", file=sys.stderr)
    with open(args.out, "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
