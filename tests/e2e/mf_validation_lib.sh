# mf_validation_lib.sh - helpers for the --validation-fraction / --early-stop
# end-to-end tests of the MF apps (sourced after lib.sh).

# mf_valid_curve LOG UNIT: "N valid_rmse test_rmse" per epoch of a log,
# UNIT being the word before N ("epoch" for sgd-mf, "outer" for cd-mf),
# with or without rotor launch's "[rank] " prefix.
mf_valid_curve() {
    awk -v unit="$2" '{ for (i = 1; i < NF; i++) {
               if ($i == unit && $(i - 1) == "rotor:") n = $(i + 1)
               if ($i == "test_rmse") t = $(i + 1)
               if ($i == "valid_rmse") print n, $(i + 1), t } }' "$1"
}

# mf_model_field DIR KEY: a number of DIR/model.json.
mf_model_field() {
    grep -o "\"$2\": [0-9.e+-]*" "$1/model.json" | awk '{ print $2 }'
}

# mf_check_best_is_min CURVE BEST: epoch BEST has the smallest validation
# RMSE of an mf_valid_curve.
mf_check_best_is_min() {
    awk -v b="$2" '$1 == b { v = $2 } { a[NR] = $2 } END { for (i in a) if (a[i] < v) exit 1 }' \
        "$1" || fail "$2 is not the smallest validation RMSE: $(cat "$1")"
}

# mf_check_eval_at_best MODEL TEST_FILE CURVE BEST: rotor eval of the saved
# model gives epoch BEST's logged test RMSE (1e-5), not the last epoch's.
mf_check_eval_at_best() {
    local got at_best at_stop
    got=$("$ROTOR" eval --model "$1" --input "$2" 2>/dev/null | grep -o 'rmse [0-9.]*' |
          head -1 | awk '{ print $2 }')
    at_best=$(awk -v b="$4" '$1 == b { print $3 }' "$3")
    at_stop=$(awk 'END { print $3 }' "$3")
    awk -v g="$got" -v b="$at_best" -v s="$at_stop" \
        'function abs(x) { return x < 0 ? -x : x }
         BEGIN { exit !(b != s && abs(g - b) <= 1e-5 && abs(g - b) < abs(g - s)) }' ||
        fail "rotor eval of the saved model gives $got; $4 logged $at_best, the last $at_stop"
}
