#!/usr/bin/env bash
# rotor partition --pipeline auto picks the factor that `rotor simulate`
# predicts fastest for the job's sizes on the stated link:
#  1. on an infinitely fast link with a slow kernel (1e4 ratings/s: 1.25 s
#     per worker against 1 ms per step) it keeps the default 2 (fewer steps
#     would save under 5%);
#  2. where the per-hop latency is several steps' compute (a pass waits a
#     credit round trip: the next node has one free slot) it leaves the
#     default, and its choice is the argmin of rotor simulate's predictions
#     over the candidates (the default unless the argmin beats it by > 5%)
#     with auto's stated step cost of 1 ms (conservative: a hand-off waiting
#     for a busy core), which its log line names;
#  3. the choice is deterministic (same log, same plan);
#  4. a bad --pipeline value is one line and exit 2.
source "$(dirname "$0")/../e2e/lib.sh"

"$ROTOR" gen mf --rows 4000 --cols 3000 --nnz 100000 --rank 4 --seed 3 --out "$TMP/r.txt" \
    2>/dev/null || fail "gen mf"
shape=(--input "$TMP/r.txt" --nodes 4 --threads 2 --pipeline auto --bytes-per-col 132)

# pipeline FILE: the factor written into a plan
pipeline() { sed -n 's/.*"pipeline": \([0-9]*\).*/\1/p' "$1/plan.json"; }

"$ROTOR" partition "${shape[@]}" --rate 1e4 --gbps 0 --latency-us 0 --overhead-us 0 \
    --out "$TMP/fast" 2>"$TMP/fast.log" || { cat "$TMP/fast.log" >&2; fail "partition fast"; }
[ "$(pipeline "$TMP/fast")" = 2 ] || { cat "$TMP/fast.log" >&2; fail "infinite link: not 2"; }

link=(--rate 1e6 --gbps 10 --latency-us 3000 --overhead-us 5)
for run in 1 2; do
    "$ROTOR" partition "${shape[@]}" "${link[@]}" --out "$TMP/slow$run" 2>"$TMP/slow$run.log" ||
        { cat "$TMP/slow$run.log" >&2; fail "partition slow"; }
    grep 'pipeline auto' "$TMP/slow$run.log" >"$TMP/slow$run.picks"
done
cmp -s "$TMP/slow1.picks" "$TMP/slow2.picks" || fail "two runs chose differently"
cmp -s "$TMP/slow1/shard-00000.bin" "$TMP/slow2/shard-00000.bin" || fail "plans differ"
grep -q '1000 us per step' "$TMP/slow1.log" || { cat "$TMP/slow1.log" >&2; fail "step cost not stated"; }
got=$(pipeline "$TMP/slow1")
[ "$got" != 2 ] || { cat "$TMP/slow1.log" >&2; fail "latency-bound: kept the default"; }

# The same sizes through rotor simulate, candidate by candidate.
cols=$(sed -n '/"dims"/,/}/s/.*"cols": \([0-9]*\).*/\1/p' "$TMP/slow1/plan.json")
nnz=$(sed -n 's/.*"nnz_train": \([0-9]*\).*/\1/p' "$TMP/slow1/plan.json")
for c in 1 2 3 4 6 8 12 16; do
    "$ROTOR" simulate --app sgd-mf --rows 4000 --cols "$cols" --nnz "$nnz" --nodes 4 \
        --threads 2 --pipeline "$c" --rate 1e6 --bytes-per-col 132 --gbps 10 \
        --latency-us 3000 --overhead-us 5 --step-overhead-us 1000 --json |
        sed -n "s/.*\"predicted_epoch_s\": \([0-9.e+-]*\).*/$c \1/p"
done >"$TMP/predictions"
want=$(awk '$1 == 2 { d = $2 } NR == 1 || $2 < best { best = $2; c = $1 }
    END { print (best < d * 0.95) ? c : 2 }' "$TMP/predictions")
[ "$got" = "$want" ] || { cat "$TMP/predictions" >&2; fail "picked $got, argmin rule says $want"; }

set +e
msg=$("$ROTOR" partition --input "$TMP/r.txt" --nodes 2 --threads 1 --pipeline often \
    --out "$TMP/bad" 2>&1 >/dev/null)
rc=$?
set -e
[ $rc = 2 ] || fail "--pipeline often: exit $rc, want 2"
[ "$(echo "$msg" | wc -l)" = 1 ] && echo "$msg" | grep -q -- '--pipeline' ||
    fail "--pipeline often: message '$msg'"
[ ! -e "$TMP/bad" ] || fail "--pipeline often left $TMP/bad"
echo PASS
