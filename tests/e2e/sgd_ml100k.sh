#!/usr/bin/env bash
# MovieLens 100K u1.base/u1.test, sgd-mf with its defaults only (AdaGrad,
# k 32, lr 0.2 decayed x0.9, lambda 0.05 n + 5, 20 epochs): test RMSE <=
# 0.925 (LIBMF's best on u1 over a small grid is about 0.92-0.93).  Skips
# when ../shared/data is absent.
source "$(dirname "$0")/lib.sh"

base=$(shared_data ml-100k/u1.base)
test=$(shared_data ml-100k/u1.test)
"$ROTOR" partition --input "$base" --test "$test" --nodes 2 --threads 2 --seed 1 \
    --out "$TMP/plan"
"$ROTOR" launch -n 2 -- "$ROTOR" train --plan "$TMP/plan" --app sgd-mf --out "$TMP/model" 2>&1 |
    tee "$TMP/log"
rmse=$(last_test_rmse "$TMP/log")
note "ml-100k u1 test RMSE with sgd-mf defaults: $rmse (target <= 0.925)"
float_le "$rmse" 0.925 || fail "test RMSE $rmse > 0.925"
# The saved model, scored by `rotor eval` from the original ids, agrees with
# the RMSE the last epoch logged (that one scores each block mid-epoch).
scored=$("$ROTOR" eval --model "$TMP/model" --input "$test" 2>/dev/null | grep -o 'rmse [0-9.]*' | awk '{print $2}')
note "rotor eval: $scored"
awk -v a="$scored" -v b="$rmse" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 0.01 * b) }' ||
    fail "rotor eval RMSE $scored differs from the logged $rmse by more than 1%"
echo PASS
