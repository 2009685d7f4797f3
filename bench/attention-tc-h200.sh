#!/usr/bin/env bash
# Attention version 3 (tensor cores: shaders/attention_prefill_tc.wgsl, attention_backward_tc.wgsl) on the GPU
# machine in one call: its CPU-reference tests (bundled here first: node scripts/device-tests.mjs .device/tests
# test/kernels/attention.test.ts test/kernels/matmul-tc.test.ts), the prefill and backward rows of `troupe bench
# attention` (the default version under the plain name, _v3 beside it) with SDPA's rows of the same shapes (fp32 and
# the bf16 flash kernel), then a LoRA training step and prefill with TROUPE_ATTENTION_PREFILL=3 and
# TROUPE_ATTENTION_BACKWARD=3 and with the defaults, in alternating order (the first run of a call runs slow:
# bench/RESULTS.md, 2026-12-05). Carry [".device/gl", ".device/node", ".device/dist", ".device/tests"]
# (bench/run-h200.sh says how to build them). Everything lands in $OUT. While version 3 is wrong on the GPU, run
# test/device/attention-tc-diagnose.ts first (25 s; its header says how).
source .device/gl/env.sh; export PATH=$PWD/.device/node/bin:$PATH
T="node .device/dist/troupe.mjs"
OUT=${OUT:-/tmp/attention-tc-out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "== tests"; timeout 150 node .device/tests/run.mjs > $OUT/tests.log 2>&1; grep -E "^ok|^FAILED|^tests:|  x " $OUT/tests.log | head -30
grep -E "version 3, lens" $OUT/tests.log | cut -c1-400
echo "== attention"; timeout 120 $T bench attention --filter _f32_ --json 2>&1 | grep '^{' | tee $OUT/attention.jsonl | cut -c1-160
timeout 100 python3 bench/torch/bench_attention.py --filter _f32_ --out $OUT/torch-attention.json 2>&1 | head -8
for mode in 3 default 3 default; do
  echo "== attention version $mode"
  if [ $mode = default ]; then unset TROUPE_ATTENTION_PREFILL TROUPE_ATTENTION_BACKWARD
  else export TROUPE_ATTENTION_PREFILL=$mode TROUPE_ATTENTION_BACKWARD=$mode; fi
  timeout 60 $T bench training --json 2>&1 | grep '^{' | tee -a $OUT/training-$mode.jsonl | cut -c1-160
  timeout 40 $T bench model --filter prefill --json 2>&1 | grep '^{' | tee -a $OUT/prefill-$mode.jsonl | cut -c1-160
done
