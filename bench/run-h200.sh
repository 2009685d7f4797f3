#!/usr/bin/env bash
# Benchmarks on the GPU machine: troupe under one runtime (Node/Dawn or Deno/wgpu) and the PyTorch
# references of the same suites in the same call, joined into ratio rows.
#
# Here, once:  npm ci && bash ../shared/tools/device-prep.sh
#              node scripts/bundle.mjs --outdir .device/dist && rm -rf .device/dist/node_modules   (no pyodide: ~11 MiB)
# A call carries 64 MiB at most, so one runtime per call:
#   carry [".device/gl", ".device/node", ".device/dist"]   command: bash bench/run-h200.sh node kernels attention model
#   carry [".device/gl", ".device/deno", ".device/dist"]   command: bash bench/run-h200.sh deno kernels attention model
#   (then the same with: load rollout training, and: grpo)
# It writes $OUT/rows.jsonl, torch-<suite>.json, results.json and bench.log; copy the results.json rows into
# bench/results.json and the figures (with date and machine) into bench/RESULTS.md.
set -uo pipefail
runtime=${1:?usage: bench/run-h200.sh node|deno SUITE...}
shift
source .device/gl/env.sh
OUT=${OUT:-/tmp/bench-out}
mkdir -p "$OUT"
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(kernels attention model)
# DIST: the bundle's folder (default .device/dist), e.g. one built from a clean checkout of the commit measured.
DIST=${DIST:-.device/dist}
case "$runtime" in
  node) troupe=(node "$DIST/troupe.mjs") ;;
  deno) troupe=(env DENO_WEBGPU_BACKEND=vulkan deno run -A "$DIST/troupe.mjs") ;;
  *) echo "runtime must be node or deno, got $runtime"; exit 2 ;;
esac
exec > >(tee "$OUT/bench.log") 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
: > "$OUT/rows.jsonl"
for s in "${suites[@]}"; do
  echo "== $runtime $s"; "${troupe[@]}" bench "$s" --json >> "$OUT/rows.jsonl" || echo "$runtime $s failed"
done
for s in "${suites[@]}"; do
  f="bench/torch/bench_${s/model/inference}.py"
  [ -f "$f" ] || continue
  echo "== torch $s"; PYTHONUNBUFFERED=1 python3 "$f" --out "$OUT/torch-$s.json" || echo "torch $s failed"
done
python3 - "$OUT" <<'PY'
import json, sys, glob, os, re
out = sys.argv[1]
torch = {}
for f in glob.glob(os.path.join(out, "torch-*.json")):
    for r in json.load(open(f)):
        torch[r["name"]] = r
rows = []
for line in open(os.path.join(out, "rows.jsonl")):
    line = line.strip()
    if not line.startswith("{"):
        continue
    r = json.loads(line)
    # the PyTorch row of the same name (ratio = troupe / PyTorch: above 1 a rate is faster, a time or memory
    # larger); tensor-core rows (matmul_tc[<tile>]_<f16|f16w>_...) against cuBLAS bf16 of the same shape
    t = torch.get(re.sub(r"^matmul_tc\w*?_f16w?_", "matmul_bf16w_", r["name"]))
    if t and t["unit"] == r["unit"] and t["value"] > 0:
        r["baseline"], r["ratio"] = t["value"], r["value"] / t["value"]
    rows.append(r)
json.dump(rows, open(os.path.join(out, "results.json"), "w"), indent=1)
for r in rows:
    ratio = f"{r['ratio']:.3f}" if "ratio" in r else "-"
    ceiling = f"{r['ofCeiling']:.3f}" if "ofCeiling" in r else "-"
    print(f"{r.get('runtime','?'):5} {r['name']:60} {r['value']:12.6g} {r['unit']:8} ratio {ratio}  of ceiling {ceiling}")
PY
