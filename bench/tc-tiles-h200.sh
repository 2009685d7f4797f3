#!/usr/bin/env bash
# The tiled tensor-core kernel's tiles on the GPU machine in one call: matmul-tc.test.ts (every tile of
# TC_TILES against the CPU reference; bundled first: node scripts/device-tests.mjs .device/tests
# test/kernels/matmul-tc.test.ts), the attention version-3 diagnostic (test/device/attention-tc-diagnose.ts, bundled
# into .device/diag), `node bench/tc-probe.mjs parts` (where a tile's time goes), then the sweep of the given tile
# filters next to cuBLAS bf16 (bench/tc-sweep-h200.sh). Carry [".device/gl", ".device/node", ".device/dist",
# ".device/tests", ".device/diag"]. Everything lands in $OUT.
set -uo pipefail
source .device/gl/env.sh
OUT=${OUT:-/tmp/tc-tiles-out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "== tests"; timeout 150 node .device/tests/run.mjs > "$OUT/tests.log" 2>&1; grep -E "^ok|^FAILED|^tests:|  x |@@result" "$OUT/tests.log" | head -30
if [ -d .device/diag ]; then
  echo "== attention diagnostic"; timeout 60 node .device/diag/test__device__attention-tc-diagnose.ts.test.js > "$OUT/diag.log" 2>&1; echo "rc $?"; grep -v "^\s*$" "$OUT/diag.log" | cut -c1-220 | head -60
fi
echo "== parts"; timeout 90 node bench/tc-probe.mjs parts 2>&1 | tee "$OUT/parts.log"
echo "== sweep"; OUT="$OUT" bash bench/tc-sweep-h200.sh "$@"
