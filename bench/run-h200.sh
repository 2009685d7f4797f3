#!/usr/bin/env bash
# Every benchmark on the GPU machine in one device call: troupe under Node/Dawn and Deno/wgpu, the
# PyTorch references in the same run, joined into ratio rows.
#
# Here, once:   npm ci && bash ../shared/tools/device-prep.sh && node scripts/bundle.mjs
# Device call:  carry [".device/gl", ".device/node", ".device/deno", "dist"], command:
#               bash bench/run-h200.sh [SUITE...]        (default: kernels attention model load rollout)
# It writes $OUT/rows-node.jsonl, rows-deno.jsonl, torch.json, results.json and a log; copy results.json
# rows into bench/results.json and the figures (with date and machine) into bench/RESULTS.md.
set -uo pipefail
source .device/gl/env.sh
OUT=${OUT:-/tmp/bench-out}
mkdir -p "$OUT"
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(kernels attention model load rollout)
exec > >(tee "$OUT/bench.log") 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
: > "$OUT/rows-node.jsonl"
: > "$OUT/rows-deno.jsonl"
for s in "${suites[@]}"; do
  echo "== node $s"; node dist/troupe.mjs bench "$s" --json >> "$OUT/rows-node.jsonl" || echo "node $s failed"
  echo "== deno $s"; DENO_WEBGPU_BACKEND=vulkan deno run -A dist/troupe.mjs bench "$s" --json >> "$OUT/rows-deno.jsonl" || echo "deno $s failed"
done
echo '[]' > "$OUT/torch.json"
for s in "${suites[@]}"; do
  f="bench/torch/bench_${s/model/inference}.py"
  [ -f "$f" ] || continue
  echo "== torch $s"; PYTHONUNBUFFERED=1 python3 "$f" --out "$OUT/torch-$s.json" || echo "torch $s failed"
done
python3 - "$OUT" <<'PY'
import json, sys, glob, os
out = sys.argv[1]
torch = {}
for f in glob.glob(os.path.join(out, "torch-*.json")):
    for r in json.load(open(f)):
        torch[r["name"]] = r
rows = []
for rt in ("node", "deno"):
    for line in open(os.path.join(out, f"rows-{rt}.jsonl")):
        line = line.strip()
        if not line.startswith("{"):
            continue
        r = json.loads(line)
        t = torch.get(r["name"])
        if t and t["unit"] == r["unit"] and t["value"] > 0:
            r["baseline"], r["ratio"] = t["value"], r["value"] / t["value"]
        rows.append(r)
json.dump(rows, open(os.path.join(out, "results.json"), "w"), indent=1)
for r in rows:
    ratio = f"{r['ratio']:.3f}" if "ratio" in r else "-"
    print(f"{r.get('runtime','?'):5} {r['name']:60} {r['value']:12.1f} {r['unit']:8} ratio {ratio}")
PY
