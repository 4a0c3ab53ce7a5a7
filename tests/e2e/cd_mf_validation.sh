#!/usr/bin/env bash
# cd-mf with --validation-fraction and --early-stop, 2 processes x 2 threads
# on noisy planted data where a rank-16 model overfits:
#  1. early stopping stops: the run ends --early-stop outer iterations after
#     its best validation RMSE (outer 8, stop at 10 on this data and seed),
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

UNIT=outer ITERS=--outer EARLY=(--early-stop 2) MAX=30
mf_check_early_stop 8 10 outer test_rmse
mf_check_saved_is_best "$best"

note "--serial gives the same bits"
mf_check_replays serial "$ROTOR" "${train[@]}" --serial

mf_check_resume_to_stop cd-mf "$best"
echo PASS
