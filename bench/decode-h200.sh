#!/usr/bin/env bash
# Decode-path measurements on the GPU machine in one call (Node/Dawn): the LoRA bank and the 256-sequence rollouts
# with the bundle before this session's optimisations (.device/dist-before) and after (.device/dist) in the same
# call, then one GRPO step of Voting against PyTorch (bench grpo). Earlier calls of 2026-12-02 also ran decode,
# per-kernel profiles, the dispatch floor and a host CPU profile (bench/RESULTS.md).
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
for suite in "lora --filter bank" "rollout --filter 256seq"; do
  for which in before after; do
    echo "== $which: $suite"; timeout 200 ${!which} bench $suite --json | tee -a "$OUT/rows-$which.jsonl" | rows
  done
done
echo "== grpo step: troupe"; timeout 200 $after bench grpo --json | tee -a "$OUT/rows.jsonl" | rows
echo "== grpo step: PyTorch"; PYTHONUNBUFFERED=1 timeout 150 python3 bench/torch/bench_grpo.py --out "$OUT/torch-grpo.json" 2>&1 | tail -8
