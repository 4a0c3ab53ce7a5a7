#!/usr/bin/env bash
# MovieLens 100K u1.base/u1.test, 2 processes x 2 threads, cd-mf with its
# defaults only (weighted lambda 0.1, k = 32, mean and biases, 20 outer
# iterations with LIBPMF's early exit): test RMSE <= 0.935 (LIBPMF's best on
# u1 over a small grid is about 0.935), and `rotor eval` of the saved model
# agrees.  Skips when ../shared/data is absent.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/cd_mf_lib.sh"

base=$(shared_data ml-100k/u1.base)
test=$(shared_data ml-100k/u1.test)
"$ROTOR" partition --input "$base" --test "$test" --nodes 2 --threads 2 --seed 1 \
    --out "$TMP/plan" 2>/dev/null || fail "cannot partition ml-100k"
"$ROTOR" launch -n 2 -- "$ROTOR" train --plan "$TMP/plan" --app cd-mf --out "$TMP/model" \
    2>"$TMP/log" || { cat "$TMP/log" >&2; fail "cd-mf run failed"; }
cd_mf_curve "$TMP/log" >"$TMP/curve.txt"
cat "$TMP/curve.txt" >&2
[ "$(wc -l <"$TMP/curve.txt")" = 20 ] || fail "expected 20 outer-iteration lines"
final=$(awk 'END { print $4 }' "$TMP/curve.txt")
note "ml-100k u1 test RMSE with cd-mf defaults: $final (target <= 0.935)"
float_le "$final" 0.935 || fail "test RMSE $final > 0.935"
cd_mf_check_eval "$TMP/model" "$test" "$TMP/log"
echo PASS
