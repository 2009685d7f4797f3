#!/usr/bin/env bash
# The tensor-core matmul on the GPU machine in one call: doctor (which checks it against the CPU), the
# matmul_tc rows of `troupe bench kernels` (each verified on sampled entries), PyTorch's bf16 x·Wᵀ rows, and
# the ratios. Carry [".device/gl", ".device/node", ".device/dist"] (bench/run-h200.sh says how to build them).
source .device/gl/env.sh; export PATH=$PWD/.device/node/bin:$PATH
T="node .device/dist/troupe.mjs"
$T doctor 2>&1 | grep -v "^  max" | tail -12
timeout 240 $T bench kernels --filter matmul_tc --json > $OUT/rows.jsonl 2> $OUT/err.log; echo "bench rc $?"; tail -5 $OUT/err.log; cat $OUT/rows.jsonl | cut -c1-200
timeout 200 python3 bench/torch/bench_kernels.py --filter bf16w_xWt --out $OUT/torch-kernels.json 2>&1 | tail -12
python3 - $OUT <<'PY'
import json, sys, re, os
out = sys.argv[1]
torch = {r["name"]: r for r in json.load(open(os.path.join(out, "torch-kernels.json")))}
for line in open(os.path.join(out, "rows.jsonl")):
    if not line.startswith("{"): continue
    r = json.loads(line); t = torch.get(re.sub(r"^matmul_tc\w*?_xWt_", "matmul_bf16w_xWt_", r["name"]))
    print(f"{r['name']:44} {r['value']/1e3:8.1f} TFLOP/s  cuBLAS bf16 {t['value']/1e3 if t else float('nan'):8.1f}  ratio {r['value']/t['value'] if t else float('nan'):.3f}")
PY
