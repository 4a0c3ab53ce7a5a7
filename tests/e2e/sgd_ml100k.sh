#!/usr/bin/env bash
# MovieLens 100K u1.base/u1.test: test RMSE <= 0.94 with k in 16..64 within
# 50 epochs.  Skips when ../shared/data is absent.
source "$(dirname "$0")/lib.sh"

base=$(shared_data ml-100k/u1.base)
test=$(shared_data ml-100k/u1.test)
"$ROTOR" partition --input "$base" --test "$test" --nodes 2 --threads 2 --seed 1 \
    --out "$TMP/plan"
"$ROTOR" launch -n 2 -- "$ROTOR" train --plan "$TMP/plan" --app sgd-mf --rank 32 --lr 0.01 \
    --lambda 0.1 --schedule fixed --epochs 50 --seed 1 --out "$TMP/model" 2>&1 | tee "$TMP/log"
rmse=$(last_test_rmse "$TMP/log")
note "ml-100k u1 test RMSE $rmse (target <= 0.94)"
float_le "$rmse" 0.94 || fail "test RMSE $rmse > 0.94"
# The saved model, scored by `rotor eval` from the original ids, agrees with
# the RMSE the last epoch logged (that one scores each block mid-epoch).
scored=$("$ROTOR" eval --model "$TMP/model" --input "$test" 2>/dev/null | grep -o 'rmse [0-9.]*' | awk '{print $2}')
note "rotor eval: $scored"
awk -v a="$scored" -v b="$rmse" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 0.01 * b) }' ||
    fail "rotor eval RMSE $scored differs from the logged $rmse by more than 1%"
echo PASS
