#!/usr/bin/env bash
# cd-mf --implicit (the weighted one-class loss over every pair, through the
# Gram matrices) on planted data: after every outer iteration the objective
# matches the serial reference, whose loops run densely over all pairs
# (tests/apps/cd_mf_ref.c), within 1e-6 relative and never rises; a
# 2-process x 2-thread run, a 1-process x 4-thread run and the one-thread
# replay (--serial) write the same W.npy and H.npy bytes and log the same
# curve; the model says it is implicit and has no biases; 2 outer iterations,
# a checkpoint and --resume to 4 give the bytes of a straight run of 4.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/cd_mf_lib.sh"

cd_mf_need_reference
cd_mf_planted_plan 300 200 6000 3
k=4 outer=4 inner=2 lambda=0.05 seed=5
imp=(--implicit --confidence log --alpha 4 --unobserved-weight 0.2)
train=(train --plan "$TMP/plan" --app cd-mf --rank $k --outer $outer --inner $inner
       --lambda $lambda --seed $seed "${imp[@]}")

# Ratings of `rotor gen mf` can be negative; log confidence needs r >= 0.
awk '{ $3 = ($3 < 0 ? -$3 : $3); print }' "$TMP/data.txt" >"$TMP/counts.txt"
"$ROTOR" partition --input "$TMP/counts.txt" --test "$TMP/test.txt" --nodes 2 --threads 2 \
    --seed 3 --out "$TMP/plan" --force 2>"$TMP/partition.log" ||
    { cat "$TMP/partition.log" >&2; fail "rotor partition of the counts failed"; }

run_logged a "$ROTOR" launch -n 2 -- "$ROTOR" "${train[@]}"
run_logged serial "$ROTOR" "${train[@]}" --serial
run_logged t4 "$ROTOR" "${train[@]}" --threads 4
single "$TMP/a" "$TMP/serial" "$TMP/t4"
for m in serial t4; do
    same_as a "$m" W.npy H.npy
    [ "$(cd_mf_curve "$TMP/a.log")" = "$(cd_mf_curve "$TMP/$m.log")" ] ||
        fail "the logged objective curve of run '$m' differs from the 2x2 run"
done
grep -q '"implicit": *true' "$TMP/a.single/model.json" || fail "model.json does not say implicit"
[ -s "$TMP/a.single/W.npy" ] && [ ! -e "$TMP/a.single/row_bias.npy" ] ||
    fail "an implicit model has factors and no biases"

"$ROTOR" launch -n 2 -- "$ROTOR" "${train[@]}" --outer 2 --checkpoint "$TMP/ck" 2>"$TMP/half.log" ||
    { cat "$TMP/half.log" >&2; fail "the first half failed"; }
run_logged resumed "$ROTOR" launch -n 2 -- "$ROTOR" "${train[@]}" --resume "$TMP/ck"
single "$TMP/resumed"
for f in W.npy H.npy; do
    cmp -s "$TMP/a.single/$f" "$TMP/resumed.single/$f" ||
        fail "$f of the resumed run differs from a straight run"
done

"$REF" "$TMP/plan" $k $outer $inner $lambda $seed "${imp[@]}" >"$TMP/ref.txt"
cd_mf_curve "$TMP/a.log" | awk '{ print $1, $2 }' >"$TMP/run.txt"
awk '{ print $2, $4 }' "$TMP/ref.txt" >"$TMP/ref2.txt"
[ "$(wc -l <"$TMP/run.txt")" = $outer ] || fail "expected $outer outer-iteration lines"
paste -d' ' "$TMP/run.txt" "$TMP/ref2.txt" | awk -v tol=1e-6 '
    function rel(a, b) { d = a - b; if (d < 0) d = -d; m = b < 0 ? -b : b; return d / m }
    {
        if ($1 != $3) { print "iteration mismatch: " $0; bad = 1 }
        if (rel($2, $4) > tol) { print "outer " $1 ": objective " $2 " vs reference " $4; bad = 1 }
        if (NR > 1 && $2 > prev * (1 + 1e-6)) { print "objective rose at outer " $1; bad = 1 }
        prev = $2
    }
    END { exit bad }' >&2 || fail "distributed implicit cd-mf differs from the serial reference"
# sgd-mf --implicit (BPR, --negatives draws per pair from the block in hand)
# on the same plan: 2 processes x 2 threads over TCP, 1 x 4 threads and
# --serial give the same bytes.
bpr=(train --plan "$TMP/plan" --app sgd-mf --implicit --rank 4 --epochs 3 --seed 5 --negatives 3)
run_logged ba "$ROTOR" launch -n 2 -- "$ROTOR" "${bpr[@]}"
run_logged bserial "$ROTOR" "${bpr[@]}" --serial
run_logged bt4 "$ROTOR" "${bpr[@]}" --threads 4
single "$TMP/ba" "$TMP/bserial" "$TMP/bt4"
for m in bserial bt4; do
    same_as ba "$m" W.npy H.npy col_bias.npy
done
grep -q 'bpr_loss' "$TMP/ba.log" || fail "sgd-mf --implicit logs no bpr_loss"
# --negatives changes the steps taken (one negative per pair is another model)
run_logged bneg1 "$ROTOR" "${bpr[@]}" --negatives 1 --serial
single "$TMP/bneg1"
! cmp -s "$TMP/bserial.single/W.npy" "$TMP/bneg1.single/W.npy" || fail "--negatives 1 and 3 give the same model"
echo PASS
