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

cd_mf_planted_plan 600 300 40000 3 0.5
train=(train --plan "$TMP/plan" --app sgd-mf --rank 16 --lambda 0.02 --seed 1
       --validation-fraction 0.2)
files=(W.npy H.npy row_bias.npy col_bias.npy)
two() { "$ROTOR" launch -n 2 -- "$ROTOR" "$@"; }

# The per-epoch "N valid_rmse test_rmse" of a log (with or without the "[rank] " prefix).
valid_curve() {
    awk '{ for (i = 1; i < NF; i++) {
               if ($i == "epoch" && $(i - 1) == "rotor:") n = $(i + 1)
               if ($i == "test_rmse") t = $(i + 1)
               if ($i == "valid_rmse") print n, $(i + 1), t } }' "$1"
}
model_field() { # model_field DIR KEY: a number of DIR/model.json
    grep -o "\"$2\": [0-9.e+-]*" "$1/model.json" | awk '{ print $2 }'
}

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
awk -v b="$best" '$1 == b { v = $2 } { a[NR] = $2 } END { for (i in a) if (a[i] < v) exit 1 }' \
    "$TMP/es.valid" || fail "epoch $best is not the smallest validation RMSE: $(cat "$TMP/es.valid")"

note "the saved model is epoch $best's"
run_logged upto two "${train[@]}" --epochs "$best"
single "$TMP/es" "$TMP/upto"
same_as upto es "${files[@]}"
[ "$(valid_curve "$TMP/upto.log")" = "$(head -n "$best" "$TMP/es.valid")" ] ||
    fail "the first $best epochs differ between the runs"
# ... which is not the last iterate: scored by rotor eval, it has epoch
# $best's logged test RMSE (and model.json's), not the last one's.
got=$("$ROTOR" eval --model "$TMP/es" --input "$TMP/test.txt" 2>/dev/null | grep -o 'rmse [0-9.]*' |
      head -1 | awk '{ print $2 }')
at_best=$(awk -v b="$best" '$1 == b { print $3 }' "$TMP/es.valid")
at_stop=$(awk 'END { print $3 }' "$TMP/es.valid")
in_json=$(model_field "$TMP/es" test_rmse)
awk -v g="$got" -v b="$at_best" -v s="$at_stop" -v j="$in_json" \
    'function abs(x) { return x < 0 ? -x : x }
     BEGIN { exit !(b != s && abs(g - b) <= 1e-5 && abs(g - j) <= 1e-5 && abs(g - b) < abs(g - s)) }' ||
    fail "rotor eval of the saved model gives $got; epoch $best logged $at_best, epoch $stop $at_stop, model.json $in_json"

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
