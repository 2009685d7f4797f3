#!/usr/bin/env bash
# Why directParts (TROUPE_TC_DIRECT_PARTS=on) won 1.1-1.6x as a kernel at 128-256 rows but not in the 256-sequence
# rollout (2026-12-07 19:40 call): more alternating rollout rounds, then one --profile rollout of each (per-kernel GPU
# time on $OUT/prof-*.txt), then the device tests of matmul-tc with the time left, where .device/tests is carried
# (directParts' cases come first).
# Prepare and carry as bench/tc-parts-h200.sh says (Deno's rows are in bench/same-kernels-h200.sh); run:
#   B=150 bash bench/tc-parts-rollout-h200.sh
B=${B:-120}
source .device/gl/env.sh
source bench/h200-lib.sh
unpack_a6
rollout() { env $2 timeout 40 node .device/v/a6/troupe.mjs bench rollout --filter 256seq_128new_tok --json $3 2>${4:-/dev/null} | tag $1 | grep tok_per; }
for r in a6 a6p a6 a6p a6 a6p; do
  left $((B - 50)) || break
  [ $r = a6p ] && rollout a6p TROUPE_TC_DIRECT_PARTS=on || rollout a6 X=1
done
echo "rounds at $((SECONDS-s)) s"
rollout a6-prof X=1 --profile $OUT/prof-a6.txt
rollout a6p-prof TROUPE_TC_DIRECT_PARTS=on --profile $OUT/prof-a6p.txt
for f in a6 a6p; do echo "== $f"; head -22 $OUT/prof-$f.txt | cut -c1-110; done
if [ -f .device/tests/run.mjs ] && left $((B - 20)); then
  node .device/tests/run.mjs $((B - 5 - SECONDS + s)) > $OUT/tests.txt 2>&1
  grep -E "^tests:|FAILED|failed:|parts" $OUT/tests.txt | head -24
fi
echo "total $((SECONDS-s)) s"
