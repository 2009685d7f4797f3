#!/usr/bin/env bash
# matmul_tc_direct's two versions on the GPU machine in one call (2026-12-07; bench/RESULTS.md, "No GPU, 2026-12-07"):
# `bench kernels` of both versions at 256 rows, the 256-sequence rollout with TROUPE_TC_DIRECT=staged and without
# (alternating) and on an older bundle (a2), Dawn's 1-sequence rollouts (beside Deno's in bench/deno-reads-h200.sh),
# batch-1 GPU busy time, then the device tests of test/kernels/matmul-tc.test.ts and `node bench/tc-probe.mjs rows`
# if time is left. B: seconds of work it may take (default 300; give the tests 120 or more on a fresh machine).
# Prepare here (bundles as xz, so that the carry stays under 64 MiB):
#   bash ../shared/tools/device-prep.sh                          # .device/gl, .device/node
#   node scripts/bundle.mjs && mkdir -p .device/ab && xz -c dist/troupe.mjs > .device/ab/a6.mjs.xz && cp -r dist/demo-model .device/ab/
#   (the same from a worktree of the older commit into .device/ab/a2.mjs.xz)
#   node scripts/device-tests.mjs .device/tests test/kernels/matmul-tc.test.ts
# Carry [".device/gl", ".device/node", ".device/ab", ".device/tests"]; run: B=300 bash bench/tc-direct-h200.sh
# Both runtimes in one call (no second machine start, no a2): bash scripts/device-shrink.sh, move a2.mjs.xz out of
# .device/ab, carry ".device/deno" too, and run: B=300 bash bench/tc-direct-h200.sh; B=180 bash bench/deno-reads-h200.sh
B=${B:-300}
source .device/gl/env.sh
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
for v in a2 a6; do [ -f .device/ab/$v.mjs.xz ] || continue; mkdir -p .device/v/$v; xz -dc .device/ab/$v.mjs.xz > .device/v/$v/troupe.mjs; cp -r .device/ab/demo-model .device/v/$v/; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
source bench/h200-lib.sh
# Measurements first: on 2026-12-07 14:46 the device tests, run first, took their whole 120 s on a fresh H100
# without a result and the warm-up 63 s more, which left no time for any row.
timeout 30 node .device/v/a6/troupe.mjs bench attention --filter decode_f16cache_256 --json >/dev/null 2>$OUT/warmup-err.txt   # warm-up
echo "warm-up at $((SECONDS-s)) s"
echo "== kernels at 256 rows (a6: storage and staged rows)"
for f in tc_staged_f16w_xWt_256x tc_direct_f16w_xWt_256x tc_stagedks; do
  left $((B - 60)) && timeout 80 node .device/v/a6/troupe.mjs bench kernels --filter $f --json 2>>$OUT/kernels-err.txt | tag a6
done
echo "kernels at $((SECONDS-s)) s"
run() { # tag, env, bundle
  env $2 timeout 60 node .device/v/$3/troupe.mjs bench rollout --filter 256seq_128new_tok --json 2>/dev/null | tag $1
}
for r in "a6s TROUPE_TC_DIRECT=staged a6" "a6 X=1 a6" "a6 X=1 a6" "a6s TROUPE_TC_DIRECT=staged a6" "a2 X=1 a2"; do
  left $((B - 40)) || { echo "stopping rounds at $((SECONDS-s)) s"; break; }
  [ -f .device/v/${r##* }/troupe.mjs ] || continue
  run $r; echo "round ${r%% *} at $((SECONDS-s)) s"
done
if left $((B - 45)); then
  echo "== a6 1-sequence rollouts (Dawn's side of bench/deno-reads-h200.sh)"
  timeout 45 node .device/v/a6/troupe.mjs bench rollout --filter 1seq_128new --json 2>/dev/null | tag a6
fi
if left $((B - 20)); then
  echo "== a6 batch-1 kernels, GPU busy"
  timeout 40 node .device/v/a6/troupe.mjs bench kernels --filter f16w_xWt_1x --timeline --json 2>$OUT/timeline-b1.txt | tag a6
fi
if left $((B - 40)); then
  echo "== device tests (matmul-tc, a6 tree; each file stopped after the time left)"
  node .device/tests/run.mjs $((B - 20 - SECONDS + s)) > $OUT/tests.txt 2>&1; grep -E "^tests:|FAILED|  x |no result" $OUT/tests.txt | head -16
  echo "tests at $((SECONDS-s)) s"
fi
if left $((B - 30)); then echo "== tc-probe rows (where version 2's time goes)"; timeout 60 node bench/tc-probe.mjs rows 2>&1 | tee $OUT/probe-rows.txt; fi
echo "total $((SECONDS-s)) s"
