#!/usr/bin/env bash
# liveness_trials.sh KILLS FREEZES: a 4-rank training job under rotor launch,
# a random rank SIGKILLed (KILLS trials) or SIGSTOPped (FREEZES trials, no
# flags) at a random time during training.  Each trial passes when every
# process of the job is gone within the limit (10 s after a kill, 15 s after
# a freeze: the launcher ends the stopped rank) and every surviving rank's
# error names the lost rank.  Prints one JSON object; exits 1 when any trial
# failed.  The test suite runs a few trials, bench/liveness.sh many.
source "$(dirname "$0")/lib.sh"
KILLS=${1:-5}
FREEZES=${2:-3}
RANKS=4

"$ROTOR" gen mf --rows 4000 --cols 2000 --nnz 200000 --rank 8 --noise 0.1 --seed 3 \
    --out "$TMP/r.txt" 2>/dev/null
"$ROTOR" partition --input "$TMP/r.txt" --nodes $RANKS --threads 1 --seed 3 \
    --out "$TMP/plan" 2>/dev/null

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

# The ranks of launcher $1 in rank order (started in that order).
rank_pids() { ps --ppid "$1" -o pid= | sort -n; }

# trial KIND: one trial; prints "ok SECONDS" or "fail SECONDS WHY".
trial() {
    local kind=$1 log="$TMP/trial.log"
    "$ROTOR" launch -n $RANKS -- "$ROTOR" train --plan "$TMP/plan" --app sgd-mf --rank 8 \
        --epochs 1000000 >"$log" 2>&1 &
    local launcher=$!
    for _ in $(seq 300); do
        grep -q 'epoch ' "$log" && break
        sleep 0.1
    done
    if ! grep -q 'epoch ' "$log"; then
        kill -9 "$launcher" 2>/dev/null
        echo "fail 0 training-never-started"
        return
    fi
    sleep "$(awk -v r=$RANDOM 'BEGIN { printf "%.2f", r / 32768 * 1.5 }')"
    local victim=$((RANDOM % RANKS)) pids
    mapfile -t pids < <(rank_pids "$launcher")
    local pid=${pids[$victim]:-}
    [ -n "$pid" ] || { echo "fail 0 no-pid-for-rank-$victim"; kill -9 "$launcher"; return; }
    local limit=10
    if [ "$kind" = kill ]; then kill -KILL "$pid"; else kill -STOP "$pid"; limit=15; fi
    local t0 ss
    t0=$(now)
    while kill -0 "$launcher" 2>/dev/null || kill -0 "${pids[@]}" 2>/dev/null; do
        ss=$(elapsed "$t0")
        if ! float_le "$ss" $((limit + 5)); then break; fi
        sleep 0.1
    done
    ss=$(elapsed "$t0")
    wait "$launcher" 2>/dev/null || true
    local why=""
    if kill -0 "${pids[@]}" 2>/dev/null; then
        why="processes-left"
        kill -9 "${pids[@]}" 2>/dev/null || true
        kill -CONT "${pids[@]}" 2>/dev/null || true
    elif ! float_le "$ss" "$limit"; then
        why="took-${ss}s"
    fi
    for r in $(seq 0 $((RANKS - 1))); do
        [ "$r" = "$victim" ] && continue
        local line
        line=$(grep "^\[$r\] rotor: error" "$log" | head -1)
        if [[ "$line" != *"rank $victim "* ]]; then
            why="${why:+$why,}rank-$r-named:${line:-nothing}"
            cp "$log" "$TMP/failed-$kind-$RANDOM.log"
        fi
    done
    if [ -z "$why" ]; then echo "ok $ss"; else echo "fail $ss ${why// /_}"; fi
}

json_trials() { # kind count -> JSON fragment, and counts failures in $failed
    local kind=$1 n=$2 max=0 oks=0 out sep="" details=""
    for i in $(seq "$n"); do
        out=$(trial "$kind")
        set -- $out
        [ "$1" = ok ] && oks=$((oks + 1)) || { failed=$((failed + 1)); note "$kind trial $i: $out"; }
        float_le "$2" "$max" || max=$2
        details="$details$sep\"$out\""
        sep=,
    done
    printf '"%s": {"trials": %d, "passed": %d, "max_seconds_to_all_gone": %s, "results": [%s]}' \
        "$kind" "$n" "$oks" "$max" "$details"
}

failed=0
k=$(json_trials kill "$KILLS")
f=$(json_trials freeze "$FREEZES")
printf '{"ranks": %d, %s, %s, "load": "%s"}\n' $RANKS "$k" "$f" "$(cut -d' ' -f1-3 /proc/loadavg)"
for log in "$TMP"/failed-*.log; do [ -f "$log" ] && tail -20 "$log" >&2; done
[ "$failed" -eq 0 ] || fail "$failed trial(s) failed"
