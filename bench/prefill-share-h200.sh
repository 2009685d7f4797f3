#!/usr/bin/env bash
# The rollout's prefills after 3404998 (2026-12-07): a group's siblings compute their prompt once (they wait one
# prefill for the prefix cache). Before it, the prefills' attention alone (attention_paged) took 919 ms of a
# 256-sequence rollout's 5 s of GPU time on an H100, each prompt computed by all 8 of its samples.
# And (2026-12-08, a7: 1d38c18 or later) SwiGLU with down_proj's f16 cast in one pass, the casts on 256 threads a
# row, and page sharing between prompts that start alike (the GRPO step's aggregators).
# Alternating rounds of the bundles before (.device/ab/before.mjs.xz, 27a7bc2), after (.device/ab/a6.mjs.xz,
# 6d14323) and, where carried, .device/ab/a7.mjs.xz: the 256-sequence rollout, a --profile of each bundle's rollout,
# then the GRPO step of Voting (generators in groups). With .device/tests carried, those tests run first.
# Prepare: node scripts/bundle.mjs && xz -T4 -9e -c dist/troupe.mjs > .device/ab/a7.mjs.xz at HEAD, the same from
# clean checkouts (git worktree) of 6d14323 into a6.mjs.xz and of 27a7bc2 into before.mjs.xz, dist/demo-model into
# .device/ab/demo-model, and node scripts/device-tests.mjs .device/tests test/model/backward-f16.test.ts
# test/kernels/matmul-tc.test.ts test/rollout/engine.test.ts.
# Carry [".device/gl", ".device/node", ".device/ab", ".device/tests"];
# run: B=330 bash bench/prefill-share-h200.sh (timeout_s 450)
B=${B:-330}
source .device/gl/env.sh
source bench/h200-lib.sh
unpack_a6
bundles="before a6"
for b in before a7; do
  [ -f .device/ab/$b.mjs.xz ] || continue
  mkdir -p .device/v/$b; xz -dc .device/ab/$b.mjs.xz > .device/v/$b/troupe.mjs; cp -r .device/ab/demo-model .device/v/$b/
done
[ -f .device/v/a7/troupe.mjs ] && bundles="before a6 a7"
if [ -f .device/tests/run.mjs ]; then node .device/tests/run.mjs 120 > $OUT/tests.txt 2>&1; grep -E "^(ok|FAIL|not ok)|failed" $OUT/tests.txt | tail -8; fi
bench() { local tag=$1 t=$2; shift 2; timeout $t node .device/v/$tag/troupe.mjs bench "$@" --json 2>$OUT/err-$tag.txt | tag $tag; }
for r in 1 2; do
  for b in $bundles; do left $((B - 60)) && bench $b 45 rollout --filter 256seq_128new_tok; done
done
for b in $bundles; do
  left $((B - 50)) && bench $b 50 rollout --filter 256seq_128new_tok --profile && cp $OUT/err-$b.txt $OUT/prof-$b.txt && head -14 $OUT/prof-$b.txt | cut -c1-100 && grep -E "x16|swiglu|glu" $OUT/prof-$b.txt | cut -c1-100
done
for b in $bundles; do left $((B - 40)) && bench $b 60 grpo; done
echo "total $((SECONDS-s)) s"
