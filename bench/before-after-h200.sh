#!/usr/bin/env bash
# Before/after on the GPU machine in one call (Node/Dawn): each suite given runs with the bundle of the commit
# before a change (.device/dist-before) and after it (.device/dist), back to back, so that both see the same
# clocks (give a suite twice to get both orders); then one GRPO step of Voting against PyTorch (bench grpo) unless NO_GRPO=1.
#   bash bench/before-after-h200.sh "attention --filter backward" training "model --filter decode_b1" "rollout --filter 256seq"
# Carry [".device/gl", ".device/node", ".device/dist", ".device/dist-before"] (bench/run-h200.sh says how to
# build a bundle; build dist-before from a clean checkout of the commit before).
source .device/gl/env.sh
OUT=${OUT:-/tmp/before-after-out}
mkdir -p "$OUT"
exec > >(tee "$OUT/before-after.log") 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
rows() { grep '^{' | python3 -c "import json,sys
for l in sys.stdin:
  r=json.loads(l); print(f\"  {r['name']:64} {r['value']:10.4g} {r['unit']}\")"; }
after="node .device/dist/troupe.mjs"
before="node .device/dist-before/troupe.mjs"
# The GPU idles at its lowest clock until work arrives: without a warm-up the first suite's "before" ran at
# 0.4-0.6x the same suite a minute later (2026-12-05, H100). WARMUP=0 skips it.
if [ "${WARMUP:-1}" != 0 ]; then echo "== warm-up (not kept)"; timeout 100 $after bench model --filter decode_b1 > /dev/null 2>&1; fi
# The order alternates from one suite to the next (before first, then after first, ...): the first run after a
# pause ran slower in 2026-12-05's calls whichever bundle it was, so a fixed order favours one side.
i=0
for suite in "$@"; do
  order="before after"; [ $((i % 2)) = 1 ] && order="after before"; i=$((i + 1))
  for which in $order; do
    # shellcheck disable=SC2086 # a suite is its name and its options
    echo "== $which: $suite"; timeout 200 ${!which} bench $suite --json | tee -a "$OUT/rows-$which.jsonl" | rows
  done
done
[ "${NO_GRPO:-}" = 1 ] && exit 0
echo "== grpo step: troupe"; timeout 200 $after bench grpo --json | tee -a "$OUT/rows.jsonl" | rows
echo "== grpo step: PyTorch"; PYTHONUNBUFFERED=1 timeout 150 python3 bench/torch/bench_grpo.py --out "$OUT/torch-grpo.json" 2>&1 | tail -8
