#!/usr/bin/env bash
# The engine runs whatever valid schedule the plan states.  A plan whose
# schedule is not the default generator's (blocks travel the workers the
# other way round, or the steps after the first c come in a shuffled order)
# trains over TCP with 2 processes x 2 threads to the same bytes as its
# single-thread replay (--serial), as 1 process x 4 threads (every step on
# the worker threads, --inline-steps no) and as 2 x 2 with
# --spare-slots 2; it trained
# (the loss fell), and its model differs from the default schedule's (the
# order of the SGD updates changed).
source "$(dirname "$0")/lib.sh"
RESCHEDULE="${ROTOR_BUILD:?}/tests/partition/plan_reschedule"
[ -x "$RESCHEDULE" ] || fail "plan_reschedule not built ($RESCHEDULE)"

"$ROTOR" gen mf --rows 2000 --cols 600 --nnz 40000 --rank 4 --noise 0.1 --seed 4 \
    --out "$TMP/r.txt" --test-out "$TMP/t.txt" --test-fraction 0.1 2>/dev/null
"$ROTOR" partition --input "$TMP/r.txt" --test "$TMP/t.txt" --nodes 2 --threads 2 --seed 4 \
    --out "$TMP/ring" 2>/dev/null
train=(train --app sgd-mf --rank 8 --lr 0.02 --epochs 5 --seed 3 --transport tcp)
run() { # run NAME PLAN ARGS...: model in $TMP/m-NAME, log in $TMP/NAME.log
    local name=$1 plan=$2; shift 2
    "$@" --plan "$plan" --out "$TMP/m-$name" 2>"$TMP/$name.log" ||
        { cat "$TMP/$name.log" >&2; fail "run '$name' failed"; }
}
run ring "$TMP/ring" "$ROTOR" launch -n 2 -- "$ROTOR" "${train[@]}"
single "$TMP/m-ring"

for kind in reverse shuffle; do
    cp -r "$TMP/ring" "$TMP/$kind"
    "$RESCHEDULE" "$TMP/$kind" "$kind" 11 || fail "plan_reschedule $kind"
    cmp -s "$TMP/ring/plan.json" "$TMP/$kind/plan.json" && fail "$kind: the schedule did not change"
    ROTOR_LOG=debug run "$kind" "$TMP/$kind" "$ROTOR" launch -n 2 -- "$ROTOR" "${train[@]}"
    # The shuffled steps make blocks leave a node out of arrival order, which
    # the engine handles by swapping slots; the reversed ring never needs it.
    if [ "$kind" = shuffle ]; then
        grep -q 'left out of slot order' "$TMP/$kind.log" || fail "shuffle: no out-of-order pass"
    else
        grep -q 'left out of slot order' "$TMP/$kind.log" && fail "reverse: out-of-order passes"
    fi
    run "$kind-serial" "$TMP/$kind" "$ROTOR" "${train[@]}" --serial
    run "$kind-t4" "$TMP/$kind" "$ROTOR" "${train[@]}" --threads 4 --inline-steps no
    # A wider window (two spare slots) changes when blocks travel, not the model.
    run "$kind-spare2" "$TMP/$kind" "$ROTOR" launch -n 2 -- "$ROTOR" "${train[@]}" --spare-slots 2
    single "$TMP/m-$kind" "$TMP/m-$kind-serial" "$TMP/m-$kind-t4" "$TMP/m-$kind-spare2"
    for other in serial t4 spare2; do
        for f in W.npy H.npy; do
            cmp -s "$TMP/m-$kind.single/$f" "$TMP/m-$kind-$other.single/$f" ||
                fail "$kind: $f of the 2x2 tcp run differs from the $other run"
        done
    done
    cmp -s "$TMP/m-$kind.single/H.npy" "$TMP/m-ring.single/H.npy" &&
        fail "$kind: same model as the default schedule (was the table executed?)"
    first=$(grep -o 'epoch   1 .*train_rmse [0-9.]*' "$TMP/$kind.log" | awk '{print $NF}')
    last=$(grep -o 'epoch   5 .*train_rmse [0-9.]*' "$TMP/$kind.log" | awk '{print $NF}')
    awk -v a="$last" -v b="$first" 'BEGIN { exit !(a < b) }' ||
        fail "$kind: train RMSE did not fall (epoch 1 '$first', epoch 5 '$last')"
    note "$kind: 2x2 tcp = serial = 1x4, train RMSE $first -> $last"
done

# A table that breaks a rule is refused when the plan is opened.
cp -r "$TMP/ring" "$TMP/broken"
sed -i '0,/\[0, 2, 4, 6\]/s//[0, 0, 4, 6]/' "$TMP/broken/plan.json"
expect_status 2 "$ROTOR" train --plan "$TMP/broken" --app sgd-mf --epochs 1 --serial
grep -q "gives block 0 to two workers" "$TMP/last.err" || { cat "$TMP/last.err"; fail "broken schedule: unclear message"; }
echo PASS
