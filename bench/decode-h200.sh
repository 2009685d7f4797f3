#!/usr/bin/env bash
# Decode-path measurements on the GPU machine in one call (Node/Dawn): decode attention, decode and rollout with
# the bundle before an optimisation (.device/dist-before) and after (.device/dist) in the same call, per-kernel
# GPU time of a decode step at batch 256 with every product on tensor cores (TROUPE_MATMUL=tc: is M = 256 worth
# them?), the GPU floor of a dispatch, the host's hot spots in a batch-1 rollout (V8 CPU profile), then one GRPO step of Voting against PyTorch (bench grpo).
# Carry [".device/gl", ".device/node", ".device/dist", ".device/dist-before"] (bench/run-h200.sh says how to
# build a bundle; build dist-before from a clean checkout of the commit before).
source .device/gl/env.sh
OUT=${OUT:-/tmp/decode-out}
mkdir -p "$OUT"
exec > >(tee "$OUT/decode.log") 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
rows() { grep '^{' | python3 -c "import json,sys
for l in sys.stdin:
  r=json.loads(l); print(f\"  {r['name']:64} {r['value']:10.4g} {r['unit']}\")"; }
after="node .device/dist/troupe.mjs"
before="node .device/dist-before/troupe.mjs"
echo "== dispatch floor"; timeout 60 $after bench dispatch --filter gpu_us --json | tee -a "$OUT/rows.jsonl" | rows
for suite in "attention --filter attention_decode" "model --filter decode" rollout; do
  for which in before after; do
    echo "== $which: $suite"; timeout 200 ${!which} bench $suite --json | tee -a "$OUT/rows-$which.jsonl" | rows
  done
done
echo "== profile decode_b256 (after, TROUPE_MATMUL=tc)"
TROUPE_MATMUL=tc timeout 100 $after bench model --filter decode_b256 --profile 2>&1 >/dev/null | head -16
echo "== profile decode_b1 (after)"; timeout 100 $after bench model --filter decode_b1 --profile 2>&1 >/dev/null | head -16
echo "== host CPU profile: rollout of one sequence (after)"
timeout 100 node --cpu-prof --cpu-prof-dir="$OUT/cpu" .device/dist/troupe.mjs bench rollout --filter 1seq_128new_tok --json | rows
node bench/cpu-top.mjs "$OUT/cpu" 30
echo "== grpo step: troupe"; timeout 240 $after bench grpo --json | tee -a "$OUT/rows.jsonl" | rows
echo "== grpo step: PyTorch"; PYTHONUNBUFFERED=1 timeout 180 python3 bench/torch/bench_grpo.py --out "$OUT/torch-grpo.json" 2>&1 | tail -12
