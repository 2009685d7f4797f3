# Sourced by the bench/*-h200.sh scripts (after .device/gl/env.sh): `tag T` prefixes JSON rows with {"tag": T},
# appends them to $OUT/rows.jsonl and prints each as one line; `left N` holds while the script has run less than N
# seconds; `unpack_a6` unpacks the carried bundle (.device/ab) into .device/v/a6 and prints the GPU and its clock.
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
tag() { sed "s/^{/{\"tag\":\"$1\",/" | tee -a $OUT/rows.jsonl | python3 -c "
import sys,json
for l in sys.stdin:
  try: r=json.loads(l)
  except: print(l.rstrip()); continue
  print(r['tag'], r['name'], round(r['value'],2), r['unit'])"; }
s=$SECONDS
left() { [ $((SECONDS-s)) -lt $1 ]; }
unpack_a6() {
  mkdir -p .device/v/a6; xz -dc .device/ab/a6.mjs.xz > .device/v/a6/troupe.mjs; cp -r .device/ab/demo-model .device/v/a6/
  nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
}
