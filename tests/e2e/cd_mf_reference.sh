#!/usr/bin/env bash
# cd-mf with its defaults (weighted regulariser plus --lambda-const 1, mean,
# biases, early exit of the alternations), 2 processes x 2 threads on planted
# data: after every outer iteration the objective matches the plain serial
# CCD++ reference (tests/apps/cd_mf_ref.c, run on the same plan's ratings)
# within 1e-6 relative and the train and test RMSE to the 6 digits the log
# prints, the objective never rises, and the planted rank is learnt (train
# RMSE 0.2007 against noise 0.1 after these 6 outer iterations).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/cd_mf_lib.sh"

cd_mf_need_reference
cd_mf_planted_plan 1200 500 30000 4
k=6 outer=6 inner=2 lambda=0.05 seed=4

"$ROTOR" launch -n 2 -- "$ROTOR" train --plan "$TMP/plan" --app cd-mf --rank $k --outer $outer \
    --inner $inner --lambda $lambda --seed $seed 2>"$TMP/run.log" ||
    { cat "$TMP/run.log" >&2; fail "cd-mf run failed"; }
"$REF" "$TMP/plan" $k $outer $inner $lambda $seed >"$TMP/ref.txt"
cd_mf_curve "$TMP/run.log" >"$TMP/run.txt"
awk '{ print $2, $4, $6, $8 }' "$TMP/ref.txt" >"$TMP/ref4.txt"
cat "$TMP/run.txt" >&2
[ "$(wc -l <"$TMP/run.txt")" = $outer ] || fail "expected $outer outer-iteration lines"

paste -d' ' "$TMP/run.txt" "$TMP/ref4.txt" | awk -v tol=1e-6 -v rtol=2e-5 '
    function rel(a, b) { d = a - b; if (d < 0) d = -d; m = b < 0 ? -b : b; return d / m }
    {
        if ($1 != $5) { print "iteration mismatch: " $0; bad = 1 }
        if (rel($2, $6) > tol) { print "outer " $1 ": objective " $2 " vs reference " $6; bad = 1 }
        if (rel($3, $7) > rtol) { print "outer " $1 ": train rmse " $3 " vs reference " $7; bad = 1 }
        if (rel($4, $8) > rtol) { print "outer " $1 ": test rmse " $4 " vs reference " $8; bad = 1 }
        if (NR > 1 && $2 > prev * (1 + 1e-6)) { print "objective rose at outer " $1; bad = 1 }
        prev = $2; last_train = $3
    }
    END {
        if (last_train > 0.25) { print "train rmse " last_train " > 0.25: planted rank not learnt"; bad = 1 }
        exit bad
    }' >&2 || fail "distributed cd-mf differs from the serial reference"
echo PASS
