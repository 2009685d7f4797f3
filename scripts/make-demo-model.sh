#!/usr/bin/env bash
# Makes the embedded demo model (public/demo-model) from scratch, reproducibly from its seed:
#   1. scripts/demo-model/prepare.ts   the SFT corpus (every workflow's prompts on the demo task's train
#                                      split, answered by the scripted teacher), the BPE tokenizer learned
#                                      on it, and the model's init config.json
#   2. troupe sft                      full-parameter training from a seeded random init (f32 masters)
#   3. scripts/demo-model/evaluate.ts  accuracy per workflow and role on the held-out validation split
#                                      (T = 0.7, through the rollout engine), written to eval.json
# Usage: bash scripts/make-demo-model.sh [OUT_DIR (default public/demo-model)]
# Env: SEED (0), STEPS (1185), BATCH (64), LR (3e-3), MAX_SECONDS (none: a time budget that lowers STEPS,
#      see troupe sft --help), EVAL_SAMPLES (4), WORK (.cache/demo-model-work),
#      RUNTIME (node: `node bin/troupe.mjs`; deno: `deno run -A src/cli/main.ts`, lavapipe on a CPU-only machine).
# The committed model is these defaults, trained on one H200 (Node/Dawn, 46 s). On a CPU driver a step
# takes 2-8 s (about 1-2.5 h in all); MAX_SECONDS=600 gives a weaker model in 10 minutes.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=${1:-public/demo-model}
work=${WORK:-.cache/demo-model-work}
SEED=${SEED:-0} STEPS=${STEPS:-1185} BATCH=${BATCH:-64} LR=${LR:-3e-3}
budget=(); [ -n "${MAX_SECONDS:-}" ] && budget=(--max-seconds "$MAX_SECONDS")
deno=node_modules/.bin/deno
node scripts/embed-shaders.mjs >/dev/null
rm -rf "$work" && mkdir -p "$work"
nice "$deno" run -A scripts/demo-model/prepare.ts --out "$work" --seed "$SEED"
if [ "${RUNTIME:-node}" = deno ]; then troupe=("$deno" run -A src/cli/main.ts); else troupe=(node bin/troupe.mjs); fi
nice "${troupe[@]}" sft --init-config "$work/config.json" --tokenizer "$work" --data "$work/corpus.jsonl" \
  --steps "$STEPS" --batch "$BATCH" --lr "$LR" --warmup 10 "${budget[@]}" --seed "$SEED" --out "$work/model"
mkdir -p "$out"
cp "$work"/model/{config.json,model.safetensors,tokenizer.json,tokenizer_config.json,generation_config.json} "$out/"
nice "$deno" run -A scripts/demo-model/evaluate.ts --model "$out" --seed "$SEED" --samples "${EVAL_SAMPLES:-4}" --json "$work/eval.json"
echo "demo model in $out; evaluation in $work/eval.json (copy its numbers into $out/README.md)"
