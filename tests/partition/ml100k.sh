#!/bin/bash
# MovieLens 100K u1.base / u1.test (decompressed to a temp dir; skipped when absent).
source "$(dirname "$0")/../e2e/lib.sh"
shared_data ml-100k/u1.base >/dev/null
shared_data ml-100k/u1.test >/dev/null
cd "$TMP"
"$ROTOR" partition --input u1.base --test u1.test --nodes 2 --threads 2 --out plan 2>log ||
    { cat log; fail "partition"; }
cat log
grep -q "u1.base: format triplets" log || fail "format not sniffed as triplets"
[ "$(json_int nnz_train plan/plan.json)" = 80000 ] || fail "nnz_train"
te=$(json_int nnz_test plan/plan.json) dr=$(json_int test_unknown_user_or_item plan/plan.json)
[ $((te + dr)) -eq 20000 ] || fail "test ratings: $te kept + $dr dropped != 20000"
[ "$dr" -gt 0 ] && grep -q "dropped $dr test ratings" log || fail "dropped count not reported"
rows=$(grep -m1 -A2 '"dims"' plan/plan.json | grep '"rows"' | tr -dc 0-9)
[ "$rows" = "$(awk '{print $1}' u1.base | sort -u | wc -l)" ] || fail "rows"
"$ROTOR" partition --verify plan || fail "verify"
# Original ids survive: line i of rows.ids is the i-th distinct user of u1.base.
awk '!seen[$1]++ {print $1}' u1.base | cmp -s - plan/rows.ids || fail "rows.ids"
awk '!seen[$2]++ {print $2}' u1.base | cmp -s - plan/cols.ids || fail "cols.ids"
echo "all ok"
