#!/usr/bin/env bash
# Deno/wgpu against Dawn on the same kernels. wgpu (Deno 2.9.6) offers no subgroups and no subgroup matrix, so
# Deno runs the version-1 f32 kernels where Dawn runs tensor cores: Deno / Dawn (0.44 for the 256-sequence rollout,
# 2026-12-07 19:40) mixes the runtimes' costs with the missing features. `troupe bench --disable subgroups` makes
# Dawn run Deno's kernels (it leaves subgroup matrix off too), so Deno / that is the runtime's own cost.
# Rounds alternate Dawn without subgroups, Deno, Dawn as it is: the 256-sequence rollout, the LoRA training step and
# the decode rows; then a --profile of Dawn's rollout without subgroups, Deno's 1-sequence rows (its run-ahead
# depths) and a --profile of the training step under both. B: seconds of work (default 200).
# Carry [".device/gl", ".device/node", ".device/deno", ".device/ab"] (bench/tc-parts-h200.sh says how they fit in
# one call); run after bench/tc-parts-rollout-h200.sh in the same call, or alone: B=200 bash bench/same-kernels-h200.sh
B=${B:-200}
source .device/gl/env.sh
source bench/h200-lib.sh
[ -f .device/v/a6/troupe.mjs ] || unpack_a6
# run TAG SECONDS RUNTIME ARGS…: one bench under Deno or Node, its rows tagged.
run() {
  local tag=$1 t=$2 rt=$3; shift 3
  if [ $rt = deno ]; then DENO_WEBGPU_BACKEND=vulkan timeout $t deno run -A .device/v/a6/troupe.mjs bench "$@" --json 2>>$OUT/deno-err.txt | tag $tag
  else timeout $t node .device/v/a6/troupe.mjs bench "$@" --json 2>>$OUT/dawn-err.txt | tag $tag; fi
}
for suite in "rollout --filter 256seq_128new_tok" "training" "model --filter decode"; do
  left $((B - 60)) || break
  run dawn-nosg 60 node $suite --disable subgroups
  run deno 60 deno $suite
  run dawn 45 node $suite
  echo "$suite at $((SECONDS-s)) s"
done
# Which kernels lose most without subgroups: per-kernel GPU time of Dawn's rollout without them ($OUT/prof-nosg.txt).
if left $((B - 40)); then
  timeout 45 node .device/v/a6/troupe.mjs bench rollout --filter 256seq_128new_tok --json --disable subgroups --profile 2>$OUT/prof-nosg.txt | tag dawn-nosg-prof
  head -24 $OUT/prof-nosg.txt | cut -c1-110
fi
left $((B - 40)) && run deno 50 deno rollout --filter 1seq_128new
# Per-kernel GPU time of the training step under Deno and under Dawn on the same kernels ($OUT/tprof-*.txt): after
# #unroll in the version-1 attention (2026-12-07, not yet measured) Deno's step should be near Dawn's there too.
if left $((B - 50)); then
  DENO_WEBGPU_BACKEND=vulkan timeout 60 deno run -A .device/v/a6/troupe.mjs bench training --json --profile 2>$OUT/tprof-deno.txt | tag deno-tprof
  timeout 45 node .device/v/a6/troupe.mjs bench training --json --profile --disable subgroups 2>$OUT/tprof-nosg.txt | tag dawn-nosg-tprof
  for f in deno nosg; do echo "== $f"; head -16 $OUT/tprof-$f.txt | cut -c1-100; done
fi
tail -3 $OUT/deno-err.txt $OUT/dawn-err.txt 2>/dev/null
echo "total $((SECONDS-s)) s"
