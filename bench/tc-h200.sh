#!/usr/bin/env bash
# The tensor-core matmul on the GPU machine in one call: doctor (its CPU-reference checks), the fixture
# checkpoints' logits and LoRA gradients with every matmul on tensor cores against Hugging Face/PEFT
# (bench/tc-parity.py), the matmul_tc rows of `troupe bench kernels` (each verified on sampled entries) with
# PyTorch's bf16 rows of the same shapes, then prefill and the LoRA training step with tensor cores (auto)
# and without (TROUPE_MATMUL=f32). Carry [".device/gl", ".device/node",
# ".device/dist"] (bench/run-h200.sh says how to build them).
source .device/gl/env.sh; export PATH=$PWD/.device/node/bin:$PATH
T="node .device/dist/troupe.mjs"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
$T doctor 2>&1 | grep -v "^  max" | tail -14
timeout 120 python3 bench/tc-parity.py "$T" $OUT 2>&1 | tail -10
rm -f $OUT/*.logits $OUT/*.grad.safetensors
timeout 200 $T bench kernels --filter matmul_tc --json > $OUT/rows.jsonl 2> $OUT/err.log; echo "bench rc $?"; tail -5 $OUT/err.log
timeout 100 python3 bench/torch/bench_kernels.py --filter bf16w --out $OUT/torch-kernels.json > /dev/null 2>&1; echo "torch rc $?"
python3 - $OUT <<'PY'
import json, sys, re, os
out = sys.argv[1]
torch = {r["name"]: r for r in json.load(open(os.path.join(out, "torch-kernels.json")))}
for line in open(os.path.join(out, "rows.jsonl")):
    if not line.startswith("{"): continue
    r = json.loads(line); t = torch.get(re.sub(r"^matmul_tc\w*?_f16w?_", "matmul_bf16w_", r["name"]))
    print(f"{r['name']:48} {r['value']/1e3:8.1f} TFLOP/s  cuBLAS bf16 {t['value']/1e3 if t else float('nan'):8.1f}  ratio {r['value']/t['value'] if t else float('nan'):.3f}")
PY
for mode in auto f32; do
  echo "== TROUPE_MATMUL=$mode"
  TROUPE_MATMUL=$mode timeout 100 $T bench model --filter prefill --json 2>&1 | grep '^{' | cut -c1-160
  TROUPE_MATMUL=$mode timeout 100 $T bench training --json 2>&1 | grep '^{' | cut -c1-160
done
