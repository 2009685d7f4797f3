#!/usr/bin/env bash
# Decode-path measurements on the GPU machine in one call (Node/Dawn): the LoRA bank, decode and rollout with the
# bundle before this session's optimisations (.device/dist-before) and after (.device/dist) in the same call, the
# host's hot spots in a batch-1 rollout (V8 CPU profile), then one GRPO step of Voting against PyTorch (bench grpo).
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
for suite in "lora --filter bank" "model --filter decode" rollout; do
  for which in before after; do
    echo "== $which: $suite"; timeout 200 ${!which} bench $suite --json | tee -a "$OUT/rows-$which.jsonl" | rows
  done
done
echo "== profile decode_b256 (after)"; timeout 100 $after bench model --filter decode_b256 --profile 2>&1 >/dev/null | head -24
echo "== host CPU profile: rollout of one sequence (after)"
timeout 100 node --cpu-prof --cpu-prof-dir="$OUT/cpu" .device/dist/troupe.mjs bench rollout --filter 1seq_128new_tok --json | rows
node bench/cpu-top.mjs "$OUT/cpu" 25
echo "== grpo step: troupe"; timeout 200 $after bench grpo --json | tee -a "$OUT/rows.jsonl" | rows
echo "== grpo step: PyTorch"; PYTHONUNBUFFERED=1 timeout 150 python3 bench/torch/bench_grpo.py --out "$OUT/torch-grpo.json" 2>&1 | tail -8
