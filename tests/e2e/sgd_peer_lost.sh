#!/usr/bin/env bash
# Killing one of 2 processes mid-epoch makes the survivor exit non-zero within
# 10 s, naming the lost rank; never a hang.
source "$(dirname "$0")/lib.sh"

"$ROTOR" gen mf --rows 20000 --cols 4000 --nnz 800000 --rank 8 --noise 0.1 --seed 3 \
    --out "$TMP/r.txt"
"$ROTOR" partition --input "$TMP/r.txt" --nodes 2 --threads 1 --seed 3 --out "$TMP/plan"
printf '127.0.0.1:%s\n127.0.0.1:%s\n' "$(free_port)" "$(free_port)" >"$TMP/hosts"
train=(train --plan "$TMP/plan" --app sgd-mf --rank 64 --epochs 100000 --hostfile "$TMP/hosts"
       --nodes 2)

"$ROTOR" "${train[@]}" --node 0 2>"$TMP/r0.log" &
pid0=$!
"$ROTOR" "${train[@]}" --node 1 2>"$TMP/r1.log" &
pid1=$!

# Wait until training is under way (the first epoch line), at most 60 s.
for _ in $(seq 600); do
    grep -q 'epoch ' "$TMP/r0.log" && break
    kill -0 "$pid0" 2>/dev/null || { cat "$TMP/r0.log" >&2; fail "rank 0 died early"; }
    sleep 0.1
done
grep -q 'epoch ' "$TMP/r0.log" || fail "training never started"

kill -9 "$pid1"
t0=$(date +%s.%N)
status=0
# Poll instead of a bare wait so a hang fails the test instead of the timeout.
for _ in $(seq 150); do
    kill -0 "$pid0" 2>/dev/null || break
    sleep 0.1
done
if kill -0 "$pid0" 2>/dev/null; then
    kill -9 "$pid0"
    fail "survivor still running 15 s after its peer was killed"
fi
wait "$pid0" || status=$?
t1=$(date +%s.%N)
elapsed=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
note "survivor exited with status $status after ${elapsed}s"
cat "$TMP/r0.log" | tail -3 >&2
[ "$status" -ne 0 ] || fail "survivor exited 0"
float_le "$elapsed" 10 || fail "survivor took ${elapsed}s (> 10 s)"
grep -q 'rank 1' "$TMP/r0.log" || fail "survivor's message does not name rank 1"
echo PASS
