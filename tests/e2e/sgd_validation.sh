#!/usr/bin/env bash
# sgd-mf with --validation-fraction and --early-stop, 2 processes x 2 threads
# on planted data where a rank-16 model with little regularisation overfits:
#  1. early stopping stops: the run ends --early-stop epochs after its best
#     validation RMSE (epoch 17, stop at 20 on this data and seed), long
#     before --epochs, and says so in the log;
#  2. the model it saves is the best one by validation: byte for byte the
#     model of a run of exactly that many epochs (same validation split, no
#     early stopping), and rotor eval of it gives that epoch's logged test
#     RMSE (scored at the end of the epoch), not the last one's;
#  3. the same run replayed with --serial, on 1 process x 4 threads and over
#     TCP writes the same bytes and logs the same validation curve;
#  4. a run stopped by --epochs between the best and the stop, checkpointed
#     and resumed (--resume) with the full --epochs, stops at the same epoch
#     and writes the same bytes as the straight run: the best-so-far model
#     and the count since it travel in the checkpoint.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/cd_mf_lib.sh"
source "$(dirname "$0")/mf_validation_lib.sh"

cd_mf_planted_plan 600 300 40000 3 0.5
train=(train --plan "$TMP/plan" --app sgd-mf --rank 16 --lambda 0.02 --seed 1
       --validation-fraction 0.2)
files=(W.npy H.npy row_bias.npy col_bias.npy)
two() { "$ROTOR" launch -n 2 -- "$ROTOR" "$@"; }

valid_curve() { mf_valid_curve "$1" epoch; }
model_field() { mf_model_field "$@"; }

note "early stopping on 2 x 2"
run_logged es two "${train[@]}" --early-stop 3 --epochs 60
valid_curve "$TMP/es.log" >"$TMP/es.valid"
stop=$(wc -l <"$TMP/es.valid")
best=$(model_field "$TMP/es" best_epoch)
note "stopped after epoch $stop, best epoch $best"
[ "$stop" = 20 ] && [ "$best" = 17 ] ||
    fail "expected the best validation RMSE at epoch 17 and the stop at 20, got $best and $stop"
[ "$(model_field "$TMP/es" epochs)" = "$stop" ] || fail "model.json's epochs is not the last one run"
# model.json carries no training score of the last iterate, which is not the model saved.
! grep -q '"train_rmse"' "$TMP/es/model.json" || fail "model.json has the last iterate's train RMSE"
grep -q '"valid_rmse": 0\.' "$TMP/es/model.json" || fail "model.json lacks the best validation RMSE"
grep -q "early stop after epoch $stop: .* the model kept is epoch $best's" "$TMP/es.log" ||
    fail "the log does not say the run stopped early"
# The best one is the smallest validation RMSE logged.
mf_check_best_is_min "$TMP/es.valid" "$best"

note "the saved model is epoch $best's"
run_logged upto two "${train[@]}" --epochs "$best"
single "$TMP/es" "$TMP/upto"
same_as upto es "${files[@]}"
[ "$(valid_curve "$TMP/upto.log")" = "$(head -n "$best" "$TMP/es.valid")" ] ||
    fail "the first $best epochs differ between the runs"
# ... which is not the last iterate: scored by rotor eval, it has epoch
# $best's logged test RMSE (and model.json's), not the last one's.
mf_check_eval_at_best "$TMP/es" "$TMP/test.txt" "$TMP/es.valid" "$best"
at_best=$(awk -v b="$best" '$1 == b { print $3 }' "$TMP/es.valid")
awk -v a="$at_best" -v j="$(model_field "$TMP/es" test_rmse)" \
    'BEGIN { d = a - j; exit !(d <= 1e-5 && d >= -1e-5) }' ||
    fail "model.json's test_rmse is not epoch $best's logged $at_best"

note "--serial, 1 x 4 threads and TCP give the same bits"
run_logged serial "$ROTOR" "${train[@]}" --early-stop 3 --epochs 60 --serial
run_logged t4 "$ROTOR" "${train[@]}" --early-stop 3 --epochs 60 --threads 4
run_logged tcp two "${train[@]}" --early-stop 3 --epochs 60 --transport tcp
single "$TMP/serial" "$TMP/t4" "$TMP/tcp"
for m in serial t4 tcp; do
    same_as es "$m" "${files[@]}"
    [ "$(valid_curve "$TMP/$m.log")" = "$(cat "$TMP/es.valid")" ] ||
        fail "run '$m' logs another validation curve"
done

note "checkpoint at epoch $((best + 1)), resume to the stop"
run_logged half two "${train[@]}" --early-stop 3 --epochs $((best + 1)) --checkpoint "$TMP/ck"
grep -q "early stop" "$TMP/half.log" && fail "the half run stopped early"
run_logged resumed two "${train[@]}" --early-stop 3 --epochs 60 --resume "$TMP/ck"
grep -q "resume: sgd-mf from" "$TMP/resumed.log" || fail "the resume is not logged"
[ "$(valid_curve "$TMP/resumed.log")" = "$(tail -n +$((best + 2)) "$TMP/es.valid")" ] ||
    fail "the resumed run logs other epochs than the straight run's last ones"
single "$TMP/resumed"
same_as es resumed "${files[@]}"
[ "$(model_field "$TMP/resumed" best_epoch)" = "$best" ] || fail "the resumed run lost its best"
echo PASS
