# Sourced by the bench/*-h200.sh scripts: `tag T` prefixes JSON rows with {"tag": T}, appends them to
# $OUT/rows.jsonl and prints each as one line; `left N` holds while the script has run less than N seconds.
tag() { sed "s/^{/{\"tag\":\"$1\",/" | tee -a $OUT/rows.jsonl | python3 -c "
import sys,json
for l in sys.stdin:
  try: r=json.loads(l)
  except: print(l.rstrip()); continue
  print(r['tag'], r['name'], round(r['value'],2), r['unit'])"; }
s=$SECONDS
left() { [ $((SECONDS-s)) -lt $1 ]; }
