#!/usr/bin/env bash
# The tensor-core tile sweep on the GPU machine: `troupe bench kernels --filter F` for each F given (default k16 and
# k32: the rows named by a tile, every tile of TC_TILES at 4096^3 f16 and the two largest training shapes, each
# verified on sampled entries) next to cuBLAS bf16 of the same shapes (bench/torch/bench_kernels.py), one line per
# row with its ratio.
# Carry [".device/gl", ".device/node", ".device/dist"] (bench/run-h200.sh says how to build them).
set -uo pipefail
source .device/gl/env.sh
OUT=${OUT:-/tmp/tc-sweep-out}
mkdir -p "$OUT"
filters=("$@")
[ ${#filters[@]} -gt 0 ] || filters=(k16 k32)
: > "$OUT/tc-rows.jsonl"
for f in "${filters[@]}"; do
  timeout 200 node .device/dist/troupe.mjs bench kernels --filter "$f" --json >> "$OUT/tc-rows.jsonl" 2> "$OUT/tc-err.txt"
  echo "bench $f rc $?"; grep -i error "$OUT/tc-err.txt" | head -3
done
timeout 120 python3 bench/torch/bench_kernels.py --filter bf16w --out "$OUT/torch-kernels.json" > /dev/null 2>&1; echo "torch rc $?"
python3 - "$OUT" <<'PY'
import json, sys, re, os
out = sys.argv[1]
try: torch = {r["name"]: r for r in json.load(open(os.path.join(out, "torch-kernels.json")))}
except Exception: torch = {}
for line in open(os.path.join(out, "tc-rows.jsonl")):
    if not line.startswith("{"): continue
    r = json.loads(line); t = torch.get(re.sub(r"^matmul_tc\w*?_f16w?_", "matmul_bf16w_", r["name"]))
    ratio = f"{r['value'] / t['value']:.3f}" if t else "-"
    print(f"{r['name']:56} {r['value'] / 1e3:8.1f} TFLOP/s  cuBLAS bf16 {t['value'] / 1e3 if t else float('nan'):8.1f}  ratio {ratio}")
PY
