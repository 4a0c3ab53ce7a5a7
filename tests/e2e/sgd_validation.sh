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
# (the settings overfit on purpose: a fixed rate and no --lambda-const,
# which the defaults have since 2026-11-27)
train=(train --plan "$TMP/plan" --app sgd-mf --rank 16 --lambda 0.02 --lambda-bias 0.02
       --lambda-const 0 --lr 0.05 --schedule fixed --seed 1 --validation-fraction 0.2)
files=(W.npy H.npy row_bias.npy col_bias.npy)
two() { "$ROTOR" launch -n 2 -- "$ROTOR" "$@"; }

UNIT=epoch ITERS=--epochs EARLY=(--early-stop 3) MAX=60
mf_check_early_stop 17 20 epochs train_rmse
mf_check_saved_is_best "$best"
at_best=$(awk -v b="$best" '$1 == b { print $3 }' "$TMP/es.valid")
awk -v a="$at_best" -v j="$(mf_model_field "$TMP/es" test_rmse)" \
    'BEGIN { d = a - j; exit !(d <= 1e-5 && d >= -1e-5) }' ||
    fail "model.json's test_rmse is not epoch $best's logged $at_best"

note "--serial, 1 x 4 threads and TCP give the same bits"
mf_check_replays serial "$ROTOR" "${train[@]}" --serial
mf_check_replays t4 "$ROTOR" "${train[@]}" --threads 4
mf_check_replays tcp two "${train[@]}" --transport tcp

mf_check_resume_to_stop sgd-mf "$best"
echo PASS
