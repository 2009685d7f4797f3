#!/usr/bin/env bash
# Decode-path measurements on the GPU machine in one call (Node/Dawn): the GPU floor of a dispatch, decode and
# rollout with the bundle before an optimisation (.device/dist-before) and after (.device/dist) in the same call,
# then per-kernel GPU time of a decode step at batch 1 and 256 (profiled: each dispatch its own pass).
# Carry [".device/gl", ".device/node", ".device/dist", ".device/dist-before"] (bench/run-h200.sh says how to
# build a bundle; build dist-before from a clean checkout of the commit before).
source .device/gl/env.sh
OUT=${OUT:-/tmp/decode-out}
mkdir -p "$OUT"
exec > >(tee "$OUT/decode.log") 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
rows() { grep '^{' | python3 -c "import json,sys
for l in sys.stdin:
  r=json.loads(l); print(f\"  {r['name']:64} {r['value']:10.2f} {r['unit']}\")"; }
after="node .device/dist/troupe.mjs"
before="node .device/dist-before/troupe.mjs"
echo "== dispatch floor"; timeout 60 $after bench dispatch --filter gpu_us --json | tee -a "$OUT/rows.jsonl" | rows
for suite in "model --filter decode" "${SUITES_EXTRA:-rollout}"; do
  for which in before after; do
    echo "== $which: $suite"; timeout 240 ${!which} bench $suite --json | tee -a "$OUT/rows-$which.jsonl" | rows
  done
done
echo "== attention paged (after)"; timeout 120 $after bench attention --filter paged --json | tee -a "$OUT/rows.jsonl" | rows
for f in decode_b1 decode_b256; do
  echo "== profile $f (after)"; timeout 120 $after bench model --filter $f --profile 2>&1 >/dev/null | head -40
done
