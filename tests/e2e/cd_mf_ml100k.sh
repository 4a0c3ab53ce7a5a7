#!/usr/bin/env bash
# MovieLens 100K u1.base/u1.test, 2 processes x 2 threads: cd-mf reaches
# test RMSE <= 0.95 within 10 outer iterations, and the RMSE improves on the
# first iteration's; `rotor eval` of the saved model agrees.  Skips when ../shared/data is absent.
#
# Hyperparameters: with the unweighted L2 term of the CCD++ paper, a small
# rank fits ml-100k best (k = 3, lambda = 3, T = 3 gives about 0.942; larger
# k overfits the users with few ratings).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/cd_mf_lib.sh"

base=$(shared_data ml-100k/u1.base)
test=$(shared_data ml-100k/u1.test)
"$ROTOR" partition --input "$base" --test "$test" --nodes 2 --threads 2 --seed 1 \
    --out "$TMP/plan" 2>/dev/null || fail "cannot partition ml-100k"
"$ROTOR" launch -n 2 -- "$ROTOR" train --plan "$TMP/plan" --app cd-mf --rank 3 --outer 10 \
    --inner 3 --lambda 3 --seed 1 --out "$TMP/model" 2>"$TMP/log" ||
    { cat "$TMP/log" >&2; fail "cd-mf run failed"; }
cd_mf_curve "$TMP/log" >"$TMP/curve.txt"
cat "$TMP/curve.txt" >&2
[ "$(wc -l <"$TMP/curve.txt")" = 10 ] || fail "expected 10 outer-iteration lines"
first=$(awk 'NR == 1 { print $4 }' "$TMP/curve.txt")
final=$(awk 'END { print $4 }' "$TMP/curve.txt")
note "ml-100k u1 test RMSE after 10 outer iterations: $final (first $first, target <= 0.95)"
float_le "$final" 0.95 || fail "test RMSE $final > 0.95"
float_le "$final" "$first" || fail "test RMSE rose from $first to $final"
cd_mf_check_eval "$TMP/model" "$test" "$TMP/log"
echo PASS
