#!/usr/bin/env bash
# Deno's side of the read-back change (2026-12-07): under deno_webgpu a mapAsync call blocks until the GPU has
# finished all submitted work, so the rollout engine now starts its reads together when it waits (deferReads).
# Times the 1-sequence rollout (deferred with 1/3/4/6/8 steps ahead, and eager reads as before), the 256-sequence
# rollout and the model's decode rows; run right after bench/tc-direct-h200.sh, whose last rows are Dawn's 1-sequence
# rollouts of the same bundle, so that both runtimes are timed on one warm machine (where Node and Dawn are still
# there from that call, this alternates Deno's rows with Dawn's). B: seconds of work (default 200).
# Prepare here: bash ../shared/tools/device-prep.sh; the a6 bundle of bench/tc-direct-h200.sh in .device/ab.
# Carry [".device/gl", ".device/deno", ".device/ab"]; run: B=200 bash bench/deno-reads-h200.sh
# (or in the same call as bench/tc-direct-h200.sh, whose header says how both runtimes fit in one carry)
B=${B:-200}
source .device/gl/env.sh
# troupe SECONDS ARGS…: the bundle under Deno with a time limit (`timeout` runs programs, not shell functions: on
# 2026-12-07 16:55 `timeout 90 troupe …` ran nothing).
troupe() { DENO_WEBGPU_BACKEND=vulkan timeout "$1" deno run -A .device/v/a6/troupe.mjs "${@:2}"; }
source bench/h200-lib.sh
unpack_a6
# On the machine of bench/tc-direct-h200.sh (still warm), Node and Dawn are still there: alternate the runtimes.
dawn=; [ -x /tmp/rt/node ] && [ -f node_modules/webgpu/dist/linux-x64/dawn.node ] && dawn=1
for round in 1 2; do
  left $((B - 60)) && troupe 90 bench rollout --filter 1seq_128new --json 2>>$OUT/deno-err.txt | tag deno
  [ -n "$dawn" ] && left $((B - 50)) && timeout 45 node .device/v/a6/troupe.mjs bench rollout --filter 1seq_128new --json 2>/dev/null | tag dawn
  echo "round $round at $((SECONDS-s)) s"
done
left $((B - 60)) && troupe 60 bench rollout --filter 256seq_128new_tok --json 2>>$OUT/deno-err.txt | tag deno
left $((B - 40)) && troupe 60 bench model --filter decode --json 2>>$OUT/deno-err.txt | tag deno
tail -5 $OUT/deno-err.txt
echo "total $((SECONDS-s)) s"
