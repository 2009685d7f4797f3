#!/usr/bin/env bash
# The matmul autotuner on the GPU machine, in two calls (each under the 10-minute limit):
#   bash bench/tune-h200.sh tune           troupe tune for Qwen3-0.6B's products (f16 weights): its table of
#                                          heuristic vs tuned µs per product; the stored table comes back in $OUT/cache
#   bash bench/tune-h200.sh bench SUITE... the suites with the table (TROUPE_TUNE=on) and without (off), alternated
#                                          off, on, off, on (ALTERNATE="off on": once each); the table is read
#                                          from .device/cache (carry it)
# Carry [".device/gl", ".device/node", ".device/dist"] (bench/run-h200.sh says how to build them), and for bench
# also ".device/cache" (the first call's $OUT/cache).
set -uo pipefail
source .device/gl/env.sh
T="node .device/dist/troupe.mjs"
OUT=${OUT:-/tmp/tune-out}
mode=${1:?usage: bench/tune-h200.sh tune | bench SUITE...}
shift
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
case "$mode" in
  tune)
    mkdir -p "$OUT/cache"
    TROUPE_CACHE_DIR="$OUT/cache" timeout 400 $T tune --random-weights Qwen3-0.6B 2> "$OUT/tune.err" | tee "$OUT/tune.txt"
    echo "tune rc ${PIPESTATUS[0]}"; grep -v '^tune: [0-9]' "$OUT/tune.err" | tail -5
    ;;
  bench)
    [ -d .device/cache ] || { echo "no .device/cache: carry the tune call's \$OUT/cache there"; exit 2; }
    for s in "$@"; do
      for tune in ${ALTERNATE:-off on off on}; do
        echo "== TROUPE_TUNE=$tune $s"
        TROUPE_CACHE_DIR=.device/cache TROUPE_TUNE=$tune timeout 150 $T bench "$s" --json 2> "$OUT/err.txt" | grep '^{' | tee -a "$OUT/rows-$tune.jsonl" | cut -c1-150
        grep -i "matmul:\|error" "$OUT/err.txt" | tail -2; : > "$OUT/err.txt"
      done
    done
    ;;
  *) echo "mode must be tune or bench, got $mode"; exit 2 ;;
esac
