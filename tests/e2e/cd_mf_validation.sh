#!/usr/bin/env bash
# cd-mf with --validation-fraction and --early-stop, 2 processes x 2 threads
# on noisy planted data where a rank-16 model overfits:
#  1. early stopping stops: the run ends --early-stop outer iterations after
#     its best validation RMSE (outer 10, stop at 12 on this data and seed),
#     long before --outer, and says so in the log;
#  2. the model it saves is the best one by validation: byte for byte the
#     model of a run of exactly that many outer iterations (same validation
#     split, no early stopping), and rotor eval of it gives that outer
#     iteration's test RMSE, not the last one's;
#  3. the same run replayed with --serial writes the same bytes and logs the
#     same curve;
#  4. a run stopped by --outer between the best and the stop, checkpointed and
#     resumed (--resume) with the full --outer, stops at the same outer
#     iteration and writes the same bytes as the straight run: the
#     best-so-far model and the count since it travel in the checkpoint.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/cd_mf_lib.sh"
source "$(dirname "$0")/mf_validation_lib.sh"

cd_mf_planted_plan 900 400 20000 3 0.5
train=(train --plan "$TMP/plan" --app cd-mf --rank 16 --inner 3 --lambda 0.15 --seed 1
       --validation-fraction 0.2)
files=(W.npy H.npy row_bias.npy col_bias.npy)
two() { "$ROTOR" launch -n 2 -- "$ROTOR" "$@"; }

valid_curve() { mf_valid_curve "$1" outer; }
model_field() { mf_model_field "$@"; }

note "early stopping on 2 x 2"
run_logged es two "${train[@]}" --early-stop 2 --outer 30
valid_curve "$TMP/es.log" >"$TMP/es.valid"
stop=$(wc -l <"$TMP/es.valid")
best=$(model_field "$TMP/es" best_outer)
note "stopped after outer $stop, best outer $best"
[ "$stop" = 12 ] && [ "$best" = 10 ] ||
    fail "expected the best validation RMSE at outer 10 and the stop at 12, got $best and $stop"
[ "$(model_field "$TMP/es" outer)" = "$stop" ] || fail "model.json's outer is not the last one run"
# model.json carries no scores of the last iterate, which is not the model saved.
! grep -q '"test_rmse"' "$TMP/es/model.json" || fail "model.json has the last iterate's test RMSE"
grep -q '"valid_rmse": 0\.' "$TMP/es/model.json" || fail "model.json lacks the best validation RMSE"
grep -q "early stop after outer $stop: .* the model kept is outer $best's" "$TMP/es.log" ||
    fail "the log does not say the run stopped early"
# The best one is the smallest validation RMSE logged.
mf_check_best_is_min "$TMP/es.valid" "$best"

note "the saved model is outer $best's"
run_logged upto two "${train[@]}" --outer "$best"
single "$TMP/es" "$TMP/upto"
same_as upto es "${files[@]}"
[ "$(valid_curve "$TMP/upto.log")" = "$(head -n "$best" "$TMP/es.valid")" ] ||
    fail "the first $best outer iterations differ between the runs"
# ... which is not the last iterate: scored by rotor eval, it has outer
# $best's logged test RMSE, not the last one's.
mf_check_eval_at_best "$TMP/es" "$TMP/test.txt" "$TMP/es.valid" "$best"

note "--serial gives the same bits"
run_logged serial "$ROTOR" "${train[@]}" --early-stop 2 --outer 30 --serial
single "$TMP/serial"
same_as es serial "${files[@]}"
[ "$(valid_curve "$TMP/serial.log")" = "$(cat "$TMP/es.valid")" ] ||
    fail "--serial logs another validation curve"

note "checkpoint at outer $((best + 1)), resume to the stop"
run_logged half two "${train[@]}" --early-stop 2 --outer $((best + 1)) --checkpoint "$TMP/ck"
grep -q "early stop" "$TMP/half.log" && fail "the half run stopped early"
run_logged resumed two "${train[@]}" --early-stop 2 --outer 30 --resume "$TMP/ck"
grep -q "resume: cd-mf from" "$TMP/resumed.log" || fail "the resume is not logged"
[ "$(valid_curve "$TMP/resumed.log")" = "$(tail -n +$((best + 2)) "$TMP/es.valid")" ] ||
    fail "the resumed run logs other outer iterations than the straight run's last ones"
single "$TMP/resumed"
same_as es resumed "${files[@]}"
[ "$(model_field "$TMP/resumed" best_outer)" = "$best" ] || fail "the resumed run lost its best"
echo PASS
