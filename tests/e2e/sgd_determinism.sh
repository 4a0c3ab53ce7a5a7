#!/usr/bin/env bash
# Same plan, seed and process count -> bit-identical W and H; the
# 2-process x 2-thread model equals a single-thread replay of the schedule
# (--serial), a 1-process x 4-thread run of the same plan (every step on the
# worker threads, --inline-steps no; the others run these small steps
# inline on the main thread) and a run on the
# portable kernel, with the default AdaGrad steps (whose accumulators travel
# with the H rows).  And the runs trained: the loss fell from the first epoch
# to the last, and another seed gives another model.
source "$(dirname "$0")/lib.sh"

"$ROTOR" gen mf --rows 3000 --cols 800 --nnz 60000 --rank 4 --noise 0.1 --powerlaw 1.2 \
    --seed 5 --out "$TMP/r.txt" --test-out "$TMP/t.txt" --test-fraction 0.1
"$ROTOR" partition --input "$TMP/r.txt" --test "$TMP/t.txt" --nodes 2 --threads 2 --seed 5 \
    --out "$TMP/plan"
train=(train --plan "$TMP/plan" --app sgd-mf --rank 12 --epochs 6 --seed 9)

"$ROTOR" launch -n 2 -- "$ROTOR" "${train[@]}" --out "$TMP/a" 2>"$TMP/a.log"
"$ROTOR" launch -n 2 -- "$ROTOR" "${train[@]}" --out "$TMP/b" 2>"$TMP/b.log"
"$ROTOR" "${train[@]}" --serial --out "$TMP/serial" 2>"$TMP/s.log"
"$ROTOR" "${train[@]}" --threads 4 --inline-steps no --out "$TMP/t4" 2>"$TMP/t4.log"
"$ROTOR" "${train[@]}" --threads 4 --kernel portable --out "$TMP/portable" 2>"$TMP/p.log"
"$ROTOR" "${train[@]}" --threads 4 --seed 10 --out "$TMP/other" 2>"$TMP/o.log"

single "$TMP/a" "$TMP/b" "$TMP/serial" "$TMP/t4" "$TMP/portable" "$TMP/other"
for m in b serial t4 portable; do
    same_as a "$m" W.npy H.npy
done
# The runs really trained (not a trivially equal untrained model).
grep -q 'epoch   6' "$TMP/a.log" || fail "2x2 run did not log 6 epochs"
first=$(grep -o 'epoch   1 .*train_rmse [0-9.]*' "$TMP/a.log" | awk '{print $NF}')
last=$(grep -o 'epoch   6 .*train_rmse [0-9.]*' "$TMP/a.log" | awk '{print $NF}')
[ -n "$first" ] && [ -n "$last" ] || fail "no train_rmse in the 2x2 log"
awk -v a="$last" -v b="$first" 'BEGIN { exit !(a < 0.9 * b) }' ||
    fail "train RMSE did not fall: epoch 1 $first, epoch 6 $last"
cmp -s "$TMP/a.single/H.npy" "$TMP/other.single/H.npy" && fail "another seed (10) gave the same model"
grep -q 'kernel portable' "$TMP/p.log" || fail "the --kernel portable run did not use the portable kernel"
echo PASS
