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

# The checks below are the same for both MF apps.  The script sets: train
# (rotor train's words, without --out), files (the exported model's files),
# two (runs rotor on 2 processes), UNIT (the log's word for an iteration:
# epoch, outer), ITERS (its option: --epochs, --outer), EARLY (the
# --early-stop words) and MAX (the stopping run's ITERS); the stopping run
# itself is $TMP/es, its curve $TMP/es.valid.

# mf_check_early_stop BEST STOP COUNT_KEY LAST_KEY: the stopping run $TMP/es
# (2 x 2) stops at iteration STOP, --early-stop iterations after its best
# validation RMSE at BEST, the smallest one logged, and says so in the log;
# model.json's COUNT_KEY is STOP, it holds the best validation RMSE but not
# LAST_KEY, a score of the last iterate, which is not the model saved.
# Sets best and stop; writes the curve to $TMP/es.valid.
mf_check_early_stop() {
    note "early stopping on 2 x 2"
    run_logged es two "${train[@]}" "${EARLY[@]}" "$ITERS" "$MAX"
    mf_valid_curve "$TMP/es.log" "$UNIT" >"$TMP/es.valid"
    stop=$(wc -l <"$TMP/es.valid")
    best=$(mf_model_field "$TMP/es" "best_$UNIT")
    note "stopped after $UNIT $stop, best $UNIT $best"
    [ "$stop" = "$2" ] && [ "$best" = "$1" ] ||
        fail "expected the best validation RMSE at $UNIT $1 and the stop at $2, got $best and $stop"
    [ "$(mf_model_field "$TMP/es" "$3")" = "$stop" ] || fail "model.json's $3 is not the last one run"
    ! grep -q "\"$4\"" "$TMP/es/model.json" || fail "model.json has the last iterate's $4"
    grep -q '"valid_rmse": 0\.' "$TMP/es/model.json" || fail "model.json lacks the best validation RMSE"
    grep -q "early stop after $UNIT $stop: .* the model kept is $UNIT $best's" "$TMP/es.log" ||
        fail "the log does not say the run stopped early"
    mf_check_best_is_min "$TMP/es.valid" "$best"
}

# mf_check_replays NAME CMD...: run NAME, CMD with the stopping run's
# options added, writes the bytes of $TMP/es and logs the same curve.
mf_check_replays() {
    local name=$1
    shift
    run_logged "$name" "$@" "${EARLY[@]}" "$ITERS" "$MAX"
    single "$TMP/$name"
    same_as es "$name" "${files[@]}"
    [ "$(mf_valid_curve "$TMP/$name.log" "$UNIT")" = "$(cat "$TMP/es.valid")" ] ||
        fail "run '$name' logs another validation curve"
}

# mf_check_saved_is_best BEST: the model $TMP/es saved is iteration BEST's:
# bit for bit the last model of a run of exactly BEST iterations (same
# validation split, no early stopping), and not the last iterate: rotor eval
# of it gives BEST's logged test RMSE, not the last one's.
mf_check_saved_is_best() {
    local best=$1
    note "the saved model is $UNIT $best's"
    run_logged upto two "${train[@]}" "$ITERS" "$best"
    single "$TMP/es" "$TMP/upto"
    same_as upto es "${files[@]}"
    [ "$(mf_valid_curve "$TMP/upto.log" "$UNIT")" = "$(head -n "$best" "$TMP/es.valid")" ] ||
        fail "the first $best ($UNIT) iterations differ between the runs"
    mf_check_eval_at_best "$TMP/es" "$TMP/test.txt" "$TMP/es.valid" "$best"
}

# mf_check_resume_to_stop APP BEST: a run stopped by ITERS at BEST + 1
# (between the best and the stop), checkpointed and resumed with MAX, logs
# the straight run's last iterations and writes its bytes: the best-so-far
# model and the count since it travel in the checkpoint.
mf_check_resume_to_stop() {
    local app=$1 best=$2
    note "checkpoint at $UNIT $((best + 1)), resume to the stop"
    run_logged half two "${train[@]}" "${EARLY[@]}" "$ITERS" $((best + 1)) --checkpoint "$TMP/ck"
    grep -q "early stop" "$TMP/half.log" && fail "the half run stopped early"
    run_logged resumed two "${train[@]}" "${EARLY[@]}" "$ITERS" "$MAX" --resume "$TMP/ck"
    grep -q "resume: $app from" "$TMP/resumed.log" || fail "the resume is not logged"
    [ "$(mf_valid_curve "$TMP/resumed.log" "$UNIT")" = "$(tail -n +$((best + 2)) "$TMP/es.valid")" ] ||
        fail "the resumed run logs other iterations than the straight run's last ones"
    single "$TMP/resumed"
    same_as es resumed "${files[@]}"
    [ "$(mf_model_field "$TMP/resumed" "best_$UNIT")" = "$best" ] ||
        fail "the resumed run lost its best"
}
