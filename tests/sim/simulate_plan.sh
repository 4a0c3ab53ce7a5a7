#!/usr/bin/env bash
# rotor simulate reads a real plan: on a 1 node x 1 thread plan with an
# infinitely fast link and no step overhead the predicted epoch is exactly
# the training ratings / rate; on a 2 x 2 plan it is at least the busiest
# worker's share; bad input gives one line and exit 2.
source "$(dirname "$0")/../e2e/lib.sh"

"$ROTOR" gen mf --rows 500 --cols 200 --nnz 8000 --rank 4 --seed 3 --out "$TMP/r.txt" \
    2>/dev/null || fail "gen mf"
"$ROTOR" partition --input "$TMP/r.txt" --nodes 1 --threads 1 --out "$TMP/p1" >/dev/null 2>&1 ||
    fail "partition 1x1"
"$ROTOR" partition --input "$TMP/r.txt" --nodes 2 --threads 2 --out "$TMP/p4" >/dev/null 2>&1 ||
    fail "partition 2x2"
fast=(--gbps 0 --latency-us 0 --overhead-us 0 --step-overhead-us 0 --rate 1e6 --json)

out=$("$ROTOR" simulate --plan "$TMP/p1" --app sgd-mf "${fast[@]}") || fail "simulate 1x1"
epoch=$(echo "$out" | sed -n 's/.*"predicted_epoch_s": \([0-9.e+-]*\).*/\1/p')
[ "$epoch" = "0.008" ] || fail "1x1 plan: predicted epoch $epoch, want 8000 / 1e6 = 0.008 ($out)"

out=$("$ROTOR" simulate --plan "$TMP/p4" --app sgd-mf "${fast[@]}") || fail "simulate 2x2"
epoch=$(echo "$out" | sed -n 's/.*"predicted_epoch_s": \([0-9.e+-]*\).*/\1/p')
awk -v e="$epoch" 'BEGIN { exit !(e >= 0.002 && e < 0.004) }' ||
    fail "2x2 plan: predicted epoch $epoch outside [8000/4/1e6, 2x that) ($out)"
echo "$out" | grep -q '"nodes": 2, "threads": 2' || fail "2x2 plan: shape not read ($out)"

# LDA's blocks are balanced by tokens, so their columns differ (here 2.9x)
# and payloads follow the words' tokens, not the columns: over one rotation
# each of 2 nodes passes every block once, so a link carries every block's
# payload: a 4-u32 header each, and per word its K counts (dense) or, with
# fewer than K/2 - 1 tokens, tokens + 1 u32 (sparse; 1 for an unseen word).
"$ROTOR" gen lda --docs 300 --vocab 2000 --topics 10 --doc-len 60 --seed 2 --out "$TMP/c.txt" \
    >/dev/null 2>&1 || fail "gen lda"
"$ROTOR" partition --app lda --input "$TMP/c.txt" --nodes 2 --threads 1 --seed 1 \
    --out "$TMP/lda" >/dev/null 2>&1 || fail "partition lda"
out=$("$ROTOR" simulate --plan "$TMP/lda" --app lda --topics 20 "${fast[@]}") || fail "simulate lda"
want=$(awk -v K=20 -v B=4 'NR == 2 { V = $1 } NR > 3 { t[$2] += $3 }
    END { for (w in t) { u += 2 * (t[w] + 1) < K ? t[w] + 1 : K; n++ } print 4 * (4 * B + u + V - n) }' \
    "$TMP/c.txt")
echo "$out" | grep -q "\"bytes_per_link\": $want," ||
    fail "lda plan: want $want bytes per link (the blocks' payloads): $out"

# A table for a sweep over node counts from sizes alone.
"$ROTOR" simulate --app sgd-mf --rank 32 --rows 480000 --cols 17700 --nnz 100M \
    --nodes 1,2,4 --threads 4 --rate 2e7 >"$TMP/sweep.txt" || fail "simulate sizes"
[ "$(grep -c '^[124] ' "$TMP/sweep.txt")" = 3 ] || { cat "$TMP/sweep.txt" >&2; fail "sweep rows"; }

# Calibration on the plan: a rate, and with every worker a thread, the
# spread of cell times (and the part a worker's rotation shares) and of the
# steps' cost beyond their slowest cell.
for how in --calibrate --calibrate-threads; do
    out=$("$ROTOR" simulate --plan "$TMP/p4" --app sgd-mf --rank 4 "$how" --gbps 0 --json \
        2>/dev/null) || fail "simulate $how"
    echo "$out" | grep -q '"rate": [1-9]' && echo "$out" | grep -q '"cell_cv": [0-9]' &&
        echo "$out" | grep -q '"step_cv": [0-9]' && echo "$out" | grep -q '"busy_rate": [1-9]' &&
        echo "$out" | grep -q '"worker_cv": [0-9]' ||
        fail "simulate $how: $out"
done
# and the spread of cell times in the threads' CPU seconds beside the wall one
echo "$out" | grep -q '"cell_cv_cpu": [0-9.]*[1-9]' || fail "simulate --calibrate-threads: no CPU cell spread: $out"

# --calibrate-pause-us: every step of every other rotation follows an idle
# time, as on a rank waiting for its blocks; those rotations give the speed
# after a wait (wake_rate_ratio, taken as the model's wake_speed up to 1)
# and the pauses are neither compute nor the steps' cost (these cells take
# microseconds: counted, they would cut the rate by orders of magnitude and
# the step cost would be the 20 ms pause).
# The rate with pauses is judged against the same calibration without: a floor
# failed under ASan on a loaded machine (82416 against 1e5), while a counted
# 20 ms pause cuts the rate by orders of magnitude, far below a tenth.
out=$("$ROTOR" simulate --plan "$TMP/p4" --app sgd-mf --rank 4 --calibrate --gbps 0 --json \
    2>/dev/null) || fail "simulate --calibrate"
echo "$out" | grep -q '"wake_speed": 1, "wake_rate_ratio": 0,' ||
    fail "simulate --calibrate without a pause: a wake speed from nowhere: $out"
for how in --calibrate --calibrate-threads; do
    out=$("$ROTOR" simulate --plan "$TMP/p4" --app sgd-mf --rank 4 "$how" --gbps 0 --json \
        2>/dev/null) || fail "simulate $how"
    base=$(echo "$out" | sed -n 's/.*"rate": \([0-9.e+-]*\).*/\1/p')
    out=$("$ROTOR" simulate --plan "$TMP/p4" --app sgd-mf --rank 4 "$how" --gbps 0 --json \
        --calibrate-pause-us 20000 2>/dev/null) || fail "simulate $how --calibrate-pause-us"
    rate=$(echo "$out" | sed -n 's/.*"rate": \([0-9.e+-]*\).*/\1/p')
    step=$(echo "$out" | sed -n 's/.*"step_overhead_us": \([0-9.e+-]*\).*/\1/p')
    wake=$(echo "$out" | sed -n 's/.*"wake_speed": \([0-9.e+-]*\).*/\1/p')
    ratio=$(echo "$out" | sed -n 's/.*"wake_rate_ratio": \([0-9.e+-]*\).*/\1/p')
    awk -v r="$rate" -v b="$base" -v s="$step" -v w="$wake" -v x="$ratio" \
        'BEGIN { exit !(b > 0 && r > b / 10 && s < 10000 && x > 0 && w == (x < 1 ? x : 1)) }' ||
        fail "simulate $how --calibrate-pause-us 20000: pause counted, or no wake speed: $out"
done

set +e
msg=$("$ROTOR" simulate --plan "$TMP/p1" --app sgd-mf --rate -3 2>&1 >/dev/null)
rc=$?
set -e
[ $rc = 2 ] || fail "negative --rate: exit $rc, want 2"
[ "$(echo "$msg" | wc -l)" = 1 ] && echo "$msg" | grep -q -- '--rate' ||
    fail "negative --rate: message '$msg'"
echo PASS
