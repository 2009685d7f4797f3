#!/usr/bin/env bash
# #unroll (2026-12-07): the decode attention's loops over the G heads, a K row's loads and the V rows, and the f32
# tiles' 16-step product loops, written out by the shader preprocessor. Under Deno, wgpu bounds every loop and the
# H100 ran the same WGSL's decode attention 2.3x and the f32 tiles 1.2-1.4x slower than Dawn did (23:02 call:
# attention_decode 1275 against 545 ms a rollout). Per-kernel GPU time of the 256-sequence rollout under Deno, Dawn
# without subgroups (the same kernels) and Dawn as it is ($OUT/prof-*.txt), then each runtime's rollout unprofiled.
# Carry [".device/gl", ".device/node", ".device/deno", ".device/ab"]; run: B=150 bash bench/unroll-h200.sh
# (QUICK=1: no profile without subgroups and no training step; Dawn's rollout as it is instead)
B=${B:-150}
source .device/gl/env.sh
source bench/h200-lib.sh
unpack_a6
bench() { # TAG SECONDS RUNTIME ARGS…
  local tag=$1 t=$2 rt=$3; shift 3
  if [ $rt = deno ]; then DENO_WEBGPU_BACKEND=vulkan timeout $t deno run -A .device/v/a6/troupe.mjs bench "$@" --json
  else timeout $t node .device/v/a6/troupe.mjs bench "$@" --json; fi 2>$OUT/err-$tag.txt | tag $tag
}
R="rollout --filter 256seq_128new_tok"
bench deno-prof 60 deno $R --profile; head -14 $OUT/err-deno-prof.txt | cut -c1-100
[ -z "$QUICK" ] && { bench nosg-prof 45 node $R --profile --disable subgroups; head -14 $OUT/err-nosg-prof.txt | cut -c1-100; }
bench dawn-prof 45 node $R --profile; grep -E "attention|^kernel" $OUT/err-dawn-prof.txt | cut -c1-100
left $((B - 40)) && bench deno 60 deno $R
left $((B - 30)) && bench nosg 45 node $R --disable subgroups
[ -n "$QUICK" ] && left $((B - 30)) && bench dawn 45 node $R
[ -z "$QUICK" ] && left $((B - 30)) && bench deno-train 60 deno training
echo "total $((SECONDS-s)) s"
