#!/usr/bin/env bash
# cd-mf runs are bit-identical: two 2-process x 2-thread runs, a one-thread
# replay of the schedule (--serial) and a 1-process x 4-thread run of the same
# plan (every step on the worker threads, --inline-steps no; the others run
# these small steps inline) write the same W.npy and H.npy bytes; the objective fell from the first
# outer iteration to the last; another seed gives another model;
# `rotor eval` of the saved model reproduces the logged test RMSE.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/cd_mf_lib.sh"

cd_mf_planted_plan 900 400 20000 3
train=(train --plan "$TMP/plan" --app cd-mf --rank 5 --outer 3 --inner 2 --lambda 0.05)

run_logged a "$ROTOR" launch -n 2 -- "$ROTOR" "${train[@]}" --seed 7
run_logged b "$ROTOR" launch -n 2 -- "$ROTOR" "${train[@]}" --seed 7
run_logged serial "$ROTOR" "${train[@]}" --seed 7 --serial
run_logged t4 "$ROTOR" "${train[@]}" --seed 7 --threads 4 --inline-steps no
run_logged other "$ROTOR" "${train[@]}" --seed 8 --threads 4

single "$TMP/a" "$TMP/b" "$TMP/serial" "$TMP/t4" "$TMP/other"
for m in b serial t4; do
    same_as a "$m" W.npy H.npy
    [ "$(cd_mf_curve "$TMP/a.log")" = "$(cd_mf_curve "$TMP/$m.log")" ] ||
        fail "the logged objective curve of run '$m' differs from the 2x2 run"
done
# The runs really trained and wrote a whole model; the seed matters.
[ "$(cd_mf_curve "$TMP/a.log" | wc -l)" = 3 ] || fail "2x2 run did not log 3 outer iterations"
for f in W.npy H.npy rows.ids cols.ids model.json; do
    [ -s "$TMP/a.single/$f" ] || fail "model file $f missing"
done
cmp -s "$TMP/a.single/H.npy" "$TMP/other.single/H.npy" && fail "another seed gave the same model"
first=$(cd_mf_curve "$TMP/a.log" | awk 'NR == 1 { print $2 }')
last=$(cd_mf_curve "$TMP/a.log" | awk 'END { print $2 }')
awk -v a="$last" -v b="$first" 'BEGIN { exit !(a < b) }' ||
    fail "the objective did not fall: first outer iteration $first, last $last"
# The saved model predicts what the run measured.
cd_mf_check_eval "$TMP/a" "$TMP/test.txt" "$TMP/a.log"
echo PASS
