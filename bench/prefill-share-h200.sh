#!/usr/bin/env bash
# The rollout's prefills after 3404998 (2026-12-07): a group's siblings compute their prompt once (they wait one
# prefill for the prefix cache). Before it, the prefills' attention alone (attention_paged) took 919 ms of a
# 256-sequence rollout's 5 s of GPU time on an H100, each prompt computed by all 8 of its samples.
# Alternating rounds of the bundle before (.device/ab/before.mjs.xz, 27a7bc2) and after (.device/ab/a6.mjs.xz), the
# 256-sequence rollout then the GRPO step of Voting (generators in groups), and a --profile of each bundle's rollout.
# Prepare: node scripts/bundle.mjs && xz -T4 -9e -c dist/troupe.mjs > .device/ab/a6.mjs.xz, and the same from a
# clean checkout of 27a7bc2 into .device/ab/before.mjs.xz. Carry [".device/gl", ".device/node", ".device/ab"];
# run: B=240 bash bench/prefill-share-h200.sh
B=${B:-240}
source .device/gl/env.sh
source bench/h200-lib.sh
unpack_a6
mkdir -p .device/v/before; xz -dc .device/ab/before.mjs.xz > .device/v/before/troupe.mjs; cp -r .device/ab/demo-model .device/v/before/
bench() { local tag=$1 t=$2; shift 2; timeout $t node .device/v/$tag/troupe.mjs bench "$@" --json 2>$OUT/err-$tag.txt | tag $tag; }
for r in 1 2; do
  for b in before a6; do left $((B - 60)) && bench $b 45 rollout --filter 256seq_128new_tok; done
done
for b in before a6; do
  left $((B - 60)) && bench $b 50 rollout --filter 256seq_128new_tok --profile && cp $OUT/err-$b.txt $OUT/prof-$b.txt && head -12 $OUT/prof-$b.txt | cut -c1-100
done
for b in before a6; do left $((B - 50)) && bench $b 60 grpo; done
echo "total $((SECONDS-s)) s"
