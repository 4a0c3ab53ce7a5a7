#!/bin/bash
# MovieLens 100K u1.base / u1.test (decompressed to a temp dir; skipped when absent).
set -u
: "${ROTOR:?set ROTOR to the rotor binary}"
D=${ROTOR_DATA_DIR:-/work/shared/data}/ml-100k
if [ ! -f "$D/u1.base.xz" ] || [ ! -f "$D/u1.test.xz" ] || ! command -v xz >/dev/null; then
    echo "SKIP: MovieLens 100K not found at $D (or xz missing)"
    exit 77
fi
T=$(mktemp -d /tmp/rotor-ml100k-XXXXXX)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
die() { echo "FAIL: $*"; exit 1; }
jint() { grep -m1 "\"$1\":" "$2" | tr -dc '0-9'; }
xz -dc "$D/u1.base.xz" >u1.base && xz -dc "$D/u1.test.xz" >u1.test || die "xz"
"$ROTOR" partition --input u1.base --test u1.test --nodes 2 --threads 2 --out plan 2>log ||
    { cat log; die "partition"; }
cat log
grep -q "u1.base: format triplets" log || die "format not sniffed as triplets"
[ "$(jint nnz_train plan/plan.json)" = 80000 ] || die "nnz_train"
te=$(jint nnz_test plan/plan.json) dr=$(jint test_unknown_user_or_item plan/plan.json)
[ $((te + dr)) -eq 20000 ] || die "test ratings: $te kept + $dr dropped != 20000"
[ "$dr" -gt 0 ] && grep -q "dropped $dr test ratings" log || die "dropped count not reported"
rows=$(grep -m1 -A2 '"dims"' plan/plan.json | grep '"rows"' | tr -dc 0-9)
[ "$rows" = "$(awk '{print $1}' u1.base | sort -u | wc -l)" ] || die "rows"
"$ROTOR" partition --verify plan || die "verify"
# Original ids survive: line i of rows.ids is the i-th distinct user of u1.base.
awk '!seen[$1]++ {print $1}' u1.base | cmp -s - plan/rows.ids || die "rows.ids"
awk '!seen[$2]++ {print $2}' u1.base | cmp -s - plan/cols.ids || die "cols.ids"
echo "all ok"
