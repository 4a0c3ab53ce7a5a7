#!/usr/bin/env bash
# Planted data (20k x 5k, 1M ratings, true rank 8, noise 0.1): 2 processes x
# 2 threads reach test RMSE <= 1.1 x noise within 30 epochs.
source "$(dirname "$0")/lib.sh"

"$ROTOR" gen mf --rows 20000 --cols 5000 --nnz 1000000 --rank 8 --noise 0.1 --seed 11 \
    --out "$TMP/r.txt" --test-out "$TMP/t.txt" --test-fraction 0.1
"$ROTOR" partition --input "$TMP/r.txt" --test "$TMP/t.txt" --nodes 2 --threads 2 --seed 11 \
    --out "$TMP/plan"
"$ROTOR" launch -n 2 -- "$ROTOR" train --plan "$TMP/plan" --app sgd-mf --rank 8 --lr 0.02 \
    --lambda 0.01 --epochs 30 --target-rmse 0.105 --seed 11 --out "$TMP/model" 2>&1 |
    tee "$TMP/log"
rmse=$(last_test_rmse "$TMP/log")
note "final test RMSE $rmse (target <= 0.11)"
float_le "$rmse" 0.11 || fail "test RMSE $rmse > 0.11"
grep -q '"test_rmse"' "$TMP/model/model.json" || fail "model.json lacks test_rmse"
for f in W.npy H.npy rows.ids cols.ids; do [ -s "$TMP/model/$f" ] || fail "missing $f"; done
# W.npy is 20000 x 8 float32: 128-byte header + 640000 bytes.
[ "$(stat -c %s "$TMP/model/W.npy")" -eq $((128 + 20000 * 8 * 4)) ] || fail "W.npy size"
# Every epoch line carries the documented fields.
grep -E 'epoch +[0-9]+ +[0-9.]+s +[0-9.]+M upd/s +train_rmse [0-9.]+ +test_rmse [0-9.]+ +stall +[0-9.]+%' \
    "$TMP/log" >/dev/null || fail "epoch line format"
echo PASS
