#!/usr/bin/env bash
# Shrinks what ../shared/tools/device-prep.sh put in .device/node and .device/deno so that both runtimes, a bundle
# and the working tree travel in one call (64 MiB in all): Node and dawn.node without their symbol tables, all three
# at xz -9e. 2026-12-07: 24.2 + 4.9 + 30.7 MB -> 21.9 + 4.5 + 29.7 MB; with one xz bundle and the demo model in
# .device/ab (3.1 MB), .device/gl, the matmul-tc device tests and a 6.8 MB tree, about 0.4 MB of the 64 MiB is left.
# The GPU machine unpacks them as before (.device/gl/env.sh).
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
shrink() { # xz file, strip or not
  [ -f "$1" ] || { echo "device-shrink: no $1 (run ../shared/tools/device-prep.sh first)"; exit 1; }
  xz -dc "$1" > "$t/bin"
  [ "$2" = strip ] && strip "$t/bin"
  xz -T4 -9e -c "$t/bin" > "$t/bin.xz" && mv "$t/bin.xz" "$1"
  echo "$1: $(stat -c %s "$1") bytes"
}
shrink .device/node/node.xz strip
shrink .device/node/webgpu/dist/linux-x64/dawn.node.xz strip
shrink .device/deno/deno.xz keep   # strip leaves Deno's binary as it is
