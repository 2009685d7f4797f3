#!/usr/bin/env bash
# q, k, v (and gate, up) as one matmul_tc_direct dispatch (directParts, TROUPE_TC_DIRECT_PARTS=on; 2026-12-07, not yet
# timed) against one dispatch each, on the GPU machine in one call: `bench kernels` of both at 128, 256 and 512 rows,
# the 256-sequence rollout with and without it (alternating), then the device tests of directParts and matmul_tc_direct
# (test/kernels/matmul-tc.test.ts) with the time left. B: seconds of work it may take (default 200).
# Prepare here:
#   bash ../shared/tools/device-prep.sh                          # .device/gl, .device/node
#   node scripts/bundle.mjs && mkdir -p .device/ab && xz -T4 -6 -c dist/troupe.mjs > .device/ab/a6.mjs.xz && cp -r dist/demo-model .device/ab/
#   node scripts/device-tests.mjs .device/tests test/kernels/matmul-tc.test.ts
# Carry [".device/gl", ".device/node", ".device/ab", ".device/tests"]; run: B=200 bash bench/tc-parts-h200.sh
# With Deno's rows too (bench/deno-reads-h200.sh, on the same warm machine): bash scripts/device-shrink.sh first,
# carry ".device/deno" too, and run: B=200 bash bench/tc-parts-h200.sh; B=150 bash bench/deno-reads-h200.sh
B=${B:-200}
source .device/gl/env.sh
source bench/h200-lib.sh
unpack_a6
echo "== kernels: one dispatch (parts) against one each (sep), x cast once either way; the single products at 256 rows"
for f in matmul_tc_sep matmul_tc_parts tc_direct_f16w_xWt_256x matmul_tc_sep matmul_tc_parts; do
  left $((B - 60)) && timeout 60 node .device/v/a6/troupe.mjs bench kernels --filter $f --json 2>>$OUT/kernels-err.txt | tag a6
done
echo "kernels at $((SECONDS-s)) s"
for r in "a6 X=1" "a6p TROUPE_TC_DIRECT_PARTS=on" "a6 X=1" "a6p TROUPE_TC_DIRECT_PARTS=on"; do
  left $((B - 40)) || { echo "stopping rounds at $((SECONDS-s)) s"; break; }
  env ${r#* } timeout 60 node .device/v/a6/troupe.mjs bench rollout --filter 256seq_128new_tok --json 2>/dev/null | tag ${r%% *}
  echo "round ${r%% *} at $((SECONDS-s)) s"
done
if left $((B - 30)) && [ -d .device/tests ]; then
  echo "== device tests (matmul-tc; the file stopped after the time left)"
  node .device/tests/run.mjs $((B - 10 - SECONDS + s)) > $OUT/tests.txt 2>&1; grep -E "^tests:|FAILED|  x |no result" $OUT/tests.txt | head -16
  grep -E "@@done.*parts" $OUT/tests.txt | head -8
fi
echo "total $((SECONDS-s)) s"
