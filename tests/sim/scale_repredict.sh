#!/usr/bin/env bash
# bench/scale.sh --repredict DIR runs no job: it predicts a kept run's rounds
# again with this rotor and the command kept beside each round (the plan
# found in DIR, wherever the run kept it), against what the round's rank
# logs measured.  Here a hand-made kept round of a 2-rank plan: the
# measured figures are the means of the logs' epochs after the first (with
# --statistic median their medians), the prediction is the kept command's
# (the means over its rotations, or their medians), the stall's mean over
# the ranks is measured beside the engine's max, and the slowest rank's
# compute less the fastest's beside the model's, --model-args reaches the model, the
# ranks' calibration logs set the model's worker spread of a round kept
# before the spreads were CPU seconds, a round kept since is predicted by its
# command as run, and a directory without kept configurations is refused.
source "$(dirname "$0")/../e2e/lib.sh"
SCALE=${ROTOR_SRC:-$(dirname "$0")/../..}/bench/scale.sh

"$ROTOR" gen mf --rows 400 --cols 300 --nnz 6000 --rank 4 --seed 5 --out "$TMP/r.txt" \
    2>/dev/null || fail "gen mf"
run=$TMP/run
mkdir -p "$run/sgd-mf.2.1.2"
"$ROTOR" partition --input "$TMP/r.txt" --nodes 2 --threads 1 --out "$run/sgd-mf.2.1.2/plan" \
    >/dev/null 2>&1 || fail "partition"
round=$run/kept/sgd-mf.2.1.2.0.5.0/round.1
mkdir -p "$round"
# the command as the run wrote it: another binary, the plan where the run's scratch directory was
model=(--app sgd-mf --rank 8 --epochs 4 --json --rate 2e6 --step-overhead-us 100 --gbps 0.5
    --latency-us 40 --overhead-us 10 --send-buffer-kib 8192)
echo "/gone/rotor simulate --plan /gone/tmp/sgd-mf.2.1.2/plan ${model[*]}" >"$round/simulate.cmd"
# rank logs: epochs 1-4 (the first is left out), and the engine's per-rank
# rotations (rank 0 the slower in rotation 2 alone)
for r in 0 1; do
    for k in 0 1 2 3; do
        echo "rotor: debug: engine: rank $r rotation: 0.01 s, compute" \
            "0.00$([ "$r$k" = 02 ] && echo 9 || echo $((k + r + 3))) s (mean over" \
            "threads), stall 0.001 s, credit wait 0.000000 s, 0 of 4 steps inline (rotation $k)," \
            "compute CPU 0.004 s, in the kernel 0.0001 s"
    done >"$round/log.$r"
done
for e in "1 0.050 40.0" "2 0.012 20.0" "3 0.010 30.0" "4 0.017 16.0"; do
    read -r k s st <<<"$e"
    echo "rotor: epoch   $k    ${s}s     1.0M upd/s  train_rmse 1.0  stall  $st%  lr 0.05"
done >>"$round/log.0"

num() { echo "$2" | sed -n "s/.*\"$1\": \([0-9.e+-]*\).*/\1/p"; }
same() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 == b + 0 && a != "") }'; } # same A B: equal numbers
# rotation_means ARGS...: "epoch stall", the means over the jittered
# rotations of `rotor simulate ARGS` (its debug line)
rotation_means() {
    ROTOR_LOG=debug "$ROTOR" simulate "$@" 2>&1 >/dev/null |
        sed -n 's/.*over [0-9]* rotations: epoch mean \([0-9.]*\) s median [0-9.]* s, stall mean \([0-9.]*\) median.*/\1 \2/p'
}
# repredicts_as CV WHAT: the repredict of $run (its last configuration)
# predicts epoch and stall as the kept model with --worker-cv CV does: the
# means over its rotations, and with --statistic median their medians.
repredicts_as() {
    local out want
    out=$(bash "$SCALE" --repredict "$run" | tail -n 1) || fail "repredict, $2"
    want=$(rotation_means --plan "$run/sgd-mf.2.1.2/plan" "${model[@]}" --worker-cv "$1")
    [ -n "$want" ] || fail "simulate --worker-cv $1: no rotation means"
    if ! same "$(num predicted_epoch_s "$out")" "${want% *}" || ! same "$(num predicted_stall "$out")" "${want#* }"; then
        fail "$2: want the means over the rotations with --worker-cv $1 ($want), got $out"
    fi
    out=$(bash "$SCALE" --repredict "$run" --statistic median | tail -n 1) || fail "repredict --statistic median, $2"
    want=$("$ROTOR" simulate --plan "$run/sgd-mf.2.1.2/plan" "${model[@]}" --worker-cv "$1") ||
        fail "simulate --worker-cv $1"
    [ "$(num predicted_epoch_s "$out") $(num predicted_stall "$out")" = \
        "$(num predicted_epoch_s "$want") $(num predicted_stall "$want")" ] ||
        fail "$2, --statistic median: want the prediction with --worker-cv $1 ($want), got $out"
}
out=$(bash "$SCALE" --repredict "$run" 2>"$TMP/err") || { cat "$TMP/err" >&2; fail "repredict"; }
[ "$(echo "$out" | wc -l)" = 1 ] || fail "one kept configuration, one line: $out"
echo "$out" | grep -q '"app": "sgd-mf", "ranks": 2, "threads": 1, "pipeline": 2, "gbps": 0.5, ' ||
    fail "the configuration is named by its directory: $out"
same "$(num measured_epoch_s "$out")" 0.013 || fail "measured epoch: mean of 0.012 0.010 0.017: $out"
same "$(num measured_stall "$out")" 0.22 || fail "measured stall: mean of 20 30 16 %: $out"
echo "$out" | grep -q '"statistic": "mean"' || fail "the statistic is named: $out"
# every rank stalled 0.001 s of its 0.01 s rotations
same "$(num measured_stall_ranks_mean "$out")" 0.1 || fail "the stall's mean over the ranks: $out"
med=$(bash "$SCALE" --repredict "$run" --statistic median) || fail "repredict --statistic median"
same "$(num measured_epoch_s "$med")" 0.012 || fail "--statistic median: epoch median of 0.012 0.010 0.017: $med"
same "$(num measured_stall "$med")" 0.2 || fail "--statistic median: stall median of 20 30 16 %: $med"
expect_status 2 bash "$SCALE" --repredict "$run" --statistic mode
grep -q 'mean or median' "$TMP/last.err" || fail "--statistic mode: $(cat "$TMP/last.err")"
expect_status 2 bash "$SCALE" --repredict "$run" --ranks-calibration-epochs 1
grep -q 'count of 2 or more' "$TMP/last.err" || fail "--ranks-calibration-epochs 1: $(cat "$TMP/last.err")"
# rank 1's rotations after the first: 0.005 0.006 0.007 (median 0.006); rank 0's 0.006
[ "$(num measured_compute_s "$out")" = 0.006 ] || fail "measured compute: the larger rank's: $out"
want=$("$ROTOR" simulate --plan "$run/sgd-mf.2.1.2/plan" "${model[@]}") || fail "simulate"
[ "$(num predicted_epoch_s "$out")" = "$(num predicted_epoch_s "$want")" ] ||
    fail "predicted epoch: the kept command's ($want), got $out"
[ "$(num predicted_stall "$out")" = "$(num predicted_stall "$want")" ] ||
    fail "predicted stall: the kept command's ($want), got $out"
same "$(num predicted_stall_ranks_mean "$out")" "$(num stall_mean "$want")" ||
    fail "predicted stall's mean over the ranks: the model's stall_mean ($want), got $out"
# "given measured compute": the model at its rate scaled by its compute CPU
# over the logs' (0.004 s a rotation), not by its wall compute over theirs
# (0.006 s; where ranks outnumber cores that is mostly waits for a core)
given_at() { # given_at FIELD MEASURED: the model's epoch at its rate x its FIELD / MEASURED
    local r
    r=$(awk -v r="$(num rate "$want")" -v p="$(num "$1" "$want")" -v m="$2" \
        'BEGIN { printf "%.6g", r * sprintf("%.6g", p / m) }')
    num predicted_epoch_s "$("$ROTOR" simulate --plan "$run/sgd-mf.2.1.2/plan" "${model[@]}" --rate "$r")"
}
by_cpu=$(given_at compute_cpu_s 0.004)
same "$(num epoch_given_measured_compute_s "$out")" "$by_cpu" ||
    fail "given measured compute: the rate scaled by compute CPU ($by_cpu), got $out"
! same "$by_cpu" "$(given_at compute_s 0.006)" || fail "the test's CPU and wall scalings agree"
# the slowest rank's compute less the fastest's, rotations 1-3: 0.001, 0.003
# (rank 0 the slower), 0.001: 0.0017 (rank 1 less rank 0: -0.0003; with
# rotation 0: 0.0015); the model's is its compute_gap_s
same "$(num measured_compute_gap_s "$out")" 0.0017 || fail "measured compute gap: $out"
same "$(num predicted_compute_gap_s "$out")" "$(num compute_gap_s "$want")" ||
    fail "predicted compute gap: the model's compute_gap_s ($want), got $out"

# --model-args come after the kept command's options: a 10 ms step adds 4 x 10 ms
more=$(bash "$SCALE" --repredict "$run" --model-args "--step-overhead-us 10100") ||
    fail "repredict with --model-args"
awk -v a="$(num predicted_epoch_s "$out")" -v b="$(num predicted_epoch_s "$more")" \
    'BEGIN { exit !(b - a > 0.039 && b - a < 0.041) }' ||
    fail "--model-args --step-overhead-us 10100: want 40 ms more than $out, got $more"

# A second configuration of the plan, whose round kept the ranks' calibration
# logs: rank 1 took 1.5 x rank 0's CPU seconds for the same work (the plan's
# nodes have 3000 ratings each) in every rotation after the first, a spread
# of (0.005 / sqrt 2) / 0.0125 = 0.2828 across the ranks, while their wall
# seconds were alike (a spread of 0: more ranks than cores wait alike for
# one, and the model shares the cores itself).  The model gets --worker-cv
# 0.2828: the CPU spread, not the wall one, and not the kept command's 0.4
# (a threaded figure of the time the spreads were wall seconds).
sleep 0.01 # kept configurations are taken in the order they were written
round2=$run/kept/sgd-mf.2.1.2.1.0/round.1
mkdir -p "$round2"
cp "$round"/log.* "$round2/"
echo "/gone/rotor simulate --plan /gone/tmp/sgd-mf.2.1.2/plan ${model[*]} --worker-cv 0.4" \
    >"$round2/simulate.cmd"
for r in 0 1; do
    for k in 0 1 2 3; do
        echo "rotor: debug: engine: rank $r rotation: 0.04 s, compute 0.030 s (mean over threads)," \
            "stall 0.0 s, credit wait 0.0 s, 0 of 4 steps inline (rotation $k), compute CPU" \
            "$([ "$r$k" = 10 ] && echo 0.030 || echo "0.0$((10 + 5 * r))") s, in the kernel 0.0 s"
    done >"$round2/calibration.log.$r"
done
repredicts_as 0.2828 "the ranks' spread, two configurations"
# A second round of it whose ranks computed alike (CPU spread 0): the plan's
# spreads pool as a root mean square, sqrt((0.2828^2 + 0) / 2) = 0.2 (their
# median would be 0.1414), for both rounds.
cp -r "$round2" "${round2%.1}.2"
sed -i 's/compute CPU 0\.0[0-9]* s/compute CPU 0.010 s/' "${round2%.1}.2"/calibration.log.*
repredicts_as 0.2 "the ranks' spreads pooled over two rounds"

# A round kept by this scale.sh (model_terms beside its command): its
# --worker-cv 0.4 is already the larger of the threaded and the ranks'
# spreads, both CPU seconds, so the repredict runs the kept command as it
# was run (the live prediction), not the ranks' pooled 0.2 alone (the old
# rule for runs whose threaded figure was wall seconds).
sleep 0.01
round3=$run/kept/sgd-mf.2.1.2.5.0/round.1
mkdir -p "$round3"
cp "$round2"/* "$round3/"
echo worker_cv_cpu >"$round3/model_terms"
repredicts_as 0.4 "a marked round runs its kept command"

# Each round's speed from the calibrations around it: a run kept before the
# rounds were bracketed (no model_terms), two rounds and a closing
# calibration, whose ranks computed the plan's busiest node's work W at 2,
# 8 and 4 M units per CPU second (compute CPU W / k a rotation) against the
# serial calibration's 4 M (wall 2 M).  Round 1 gets the geometric mean of
# its calibration and round 2's, k = 4 M: the ranks' rate equals the serial
# one, --rate 2e6 --busy-core-speed 1 (its own alone, the old rule: 2e6 and
# 0.5); round 2 gets its own and the closing one's, k = sqrt(32) M: --rate
# 2.82843e6, busy 1 (alone: 4e6, 1).  --calibrate-after 0 keeps the old rule.
# (--busy-pool round: the busy speed of the same two calibrations; the
# default pools it over the plan's, below.)
ranks_at() { # ranks_at DIR K: a kept calibration in DIR, serial 4 M (wall 2 M), the ranks at K
    local cpu r k
    mkdir -p "$1"
    echo "2e6 20 100 0 0 0 4e6 3e6 1" >"$1/calibration"
    cpu=$(awk -v w="$work" -v k="$2" 'BEGIN { printf "%.6f", w / k }')
    for r in 0 1; do
        for k in 0 1 2 3; do
            echo "rotor: debug: engine: rank $r rotation: 1 s, compute 1 s (mean over threads)," \
                "stall 0.0 s, credit wait 0.0 s, 0 of 4 steps inline (rotation $k), compute CPU" \
                "$cpu s, in the kernel 0.0 s"
        done >"$1/calibration.log.$r"
    done
    [ "${1##*/}" = closing ] && return 0
    cp "$round"/log.* "$1/"
    echo "/gone/rotor simulate --plan /gone/sgd-mf.2.1.2/plan ${model[*]} --rate 1e6" >"$1/simulate.cmd"
}
run2=$TMP/run2
mkdir -p "$run2/sgd-mf.2.1.2"
cp -r "$run/sgd-mf.2.1.2/plan" "$run2/sgd-mf.2.1.2/"
work=$(num compute_s "$("$ROTOR" simulate --plan "$run2/sgd-mf.2.1.2/plan" --app sgd-mf --rank 8 \
    --epochs 4 --rate 1 --gbps 0 --json)") || fail "the plan's work"
cfg2=$run2/kept/sgd-mf.2.1.2.0.5.0
for c in "round.1 2e6" "round.2 8e6" "closing 4e6"; do
    read -r where k <<<"$c"
    ranks_at "$cfg2/$where" "$k"
done
cp -r "$run2" "$TMP/run3" # for --busy-from threads, below
rounds_of() { # rounds_of "RATE BUSY" "RATE BUSY": the predicted epochs with these speeds, a JSON list
    local a b
    a=$("$ROTOR" simulate --plan "$run2/sgd-mf.2.1.2/plan" "${model[@]}" --worker-cv 0 \
        --rate "${1% *}" --busy-core-speed "${1#* }") || fail "simulate $1"
    b=$("$ROTOR" simulate --plan "$run2/sgd-mf.2.1.2/plan" "${model[@]}" --worker-cv 0 \
        --rate "${2% *}" --busy-core-speed "${2#* }") || fail "simulate $2"
    echo "[$(num predicted_epoch_s "$a"), $(num predicted_epoch_s "$b")]"
}
list() { echo "$1" | sed -n "s/.*\"$2\": \(\[[^]]*\]\).*/\1/p"; }
out=$(bash "$SCALE" --repredict "$run2" --busy-pool round) || fail "repredict, bracketed rounds"
want=$(rounds_of "2e6 1" "2.82843e6 1")
[ "$(list "$out" round_predicted_epoch_s)" = "$want" ] ||
    fail "each round from the calibrations before and after it: want $want, got $out"
[ "$(rounds_of "2e6 0.5" "4e6 1")" != "$want" ] || fail "the test's speeds do not tell the rules apart"
out=$(bash "$SCALE" --repredict "$run2" --calibrate-after 0 --busy-pool round) || fail "repredict --calibrate-after 0"
want=$(rounds_of "2e6 0.5" "4e6 1")
[ "$(list "$out" round_predicted_epoch_s)" = "$want" ] ||
    fail "--calibrate-after 0: each round from its own calibration: want $want, got $out"
# a round kept by this scale.sh with the bracket rule: its kept command as run
echo "worker_cv_cpu speed:bracket" >"$cfg2/round.1/model_terms"
out=$(bash "$SCALE" --repredict "$run2" --busy-pool round) || fail "repredict, a marked round"
kept=$("$ROTOR" simulate --plan "$run2/sgd-mf.2.1.2/plan" "${model[@]}" --rate 1e6) || fail "simulate"
want=$(rounds_of "2e6 1" "2.82843e6 1" | sed "s/^\[[^,]*,/[$(num predicted_epoch_s "$kept"),/")
[ "$(list "$out" round_predicted_epoch_s)" = "$want" ] ||
    fail "a marked round runs its kept command (--rate 1e6): want $want, got $out"

# a run whose round 2 lost its calibration: no round is given another's
# speed (the kept commands' --rate 1e6 stand), whatever the closing one
rm "$cfg2/round.1/model_terms" "$cfg2/round.2/calibration"
out=$(bash "$SCALE" --repredict "$run2") || fail "repredict, a calibration missing"
kept=$(num predicted_epoch_s "$("$ROTOR" simulate --plan "$run2/sgd-mf.2.1.2/plan" "${model[@]}" \
    --rate 1e6 --worker-cv 0)") || fail "simulate"
[ "$(list "$out" round_predicted_epoch_s)" = "[$kept, $kept]" ] ||
    fail "a round's calibration missing: want the kept speeds [$kept, $kept], got $out"

# --busy-from threads: a round's busy speed is the threaded calibration's CPU
# rate over the serial one's, each calibration's own pair, then their
# geometric mean.  The closing calibration runs no threaded job (its
# threads_cpu_rate is 0): round 2 gets its own pair, 2 M / 4 M = 0.5, not
# its threaded rate over the mean of its serial rate and the closing one's
# 1 M (2 M / 2 M = 1; rev22 F4); round 1: sqrt(3/4 x 2/4) = 0.612.  (Both
# nodes on a host of 2 cores, --host-cores 2, so that the busy speed counts.)
run3=$TMP/run3 cfg3=$TMP/run3/kept/sgd-mf.2.1.2.0.5.0
echo "2e6 20 100 0 0 0 4e6 3e6 1" >"$cfg3/round.1/calibration"
echo "2e6 20 100 0 0 0 4e6 2e6 1" >"$cfg3/round.2/calibration"
echo "2e6 20 0 0 0 0 1e6 0 null 0" >"$cfg3/closing/calibration"
out=$(bash "$SCALE" --repredict "$run3" --busy-from threads --busy-pool round --model-args "--host-cores 2") ||
    fail "repredict --busy-from threads"
speed_epochs() { # speed_epochs "RATE BUSY"...: the predicted epochs at these speeds, a JSON list
    local s e=()
    for s in "$@"; do
        e+=("$(num predicted_epoch_s "$("$ROTOR" simulate --plan "$run3/sgd-mf.2.1.2/plan" "${model[@]}" \
            --worker-cv 0 --rate "${s% *}" --busy-core-speed "${s#* }" --host-cores 2)")")
    done
    local IFS=,
    echo "[${e[*]}]" | sed 's/,/, /g'
}
busy_epochs() { speed_epochs "2e6 $1" "2e6 $2"; } # busy_epochs BUSY1 BUSY2: at 2 M
want=$(busy_epochs 0.612 0.5)
[ "$(list "$out" round_predicted_epoch_s)" = "$want" ] ||
    fail "--busy-from threads: each calibration's own pair: want $want, got $out"
[ "$(busy_epochs 0.612 1)" != "$want" ] || fail "the test's speeds do not tell F4 apart"

# --busy-pool plan (the default): every round of a configuration gets the
# median of each calibration's own ratio, the ranks' CPU rate over the
# serial one's, over all the calibrations of its plan so far (the earlier
# configurations' and its own, the closing one's too), its rate the serial
# wall rate of the two around it as before.  Configuration A's ranks ran at
# 2, 3 and 1.6 M against the serial 4 M: ratios 0.5, 0.75, 0.4, busy 0.5 in
# both rounds (the bracket rule: sqrt(0.5 x 0.75) = 0.612 and
# sqrt(0.75 x 0.4) = 0.548); the later B's at 3.6 M twice: 0.9, 0.9, its
# round gets the median of all five, 0.75 (its own pair alone: 0.9), and A's
# are not moved by it (of all five: 0.75).  Between them ran C and D, of
# other plans (3 blocks per worker; 2 threads per rank), their ranks at
# 0.4 M (ratio 0.1): another plan's calibrations are not pooled (with them
# B's median would be 0.5).  The run's order is kept/ORDER's, A C D B,
# whatever the directories' times say (here the reverse: a copy without
# times), and without ORDER (a run kept before it) their times'.
run4=$TMP/run4
mkdir -p "$run4/sgd-mf.2.1.2" "$run4/sgd-mf.2.1.3" "$run4/sgd-mf.2.2.2"
cp -r "$run/sgd-mf.2.1.2/plan" "$run4/sgd-mf.2.1.2/"
"$ROTOR" partition --input "$TMP/r.txt" --nodes 2 --threads 1 --pipeline 3 --out "$run4/sgd-mf.2.1.3/plan" \
    >/dev/null 2>&1 || fail "partition, pipeline 3"
"$ROTOR" partition --input "$TMP/r.txt" --nodes 2 --threads 2 --out "$run4/sgd-mf.2.2.2/plan" \
    >/dev/null 2>&1 || fail "partition, 2 threads"
ranks_at "$run4/kept/sgd-mf.2.1.2.0.5.0/round.1" 2e6
ranks_at "$run4/kept/sgd-mf.2.1.2.0.5.0/round.2" 3e6
ranks_at "$run4/kept/sgd-mf.2.1.2.0.5.0/closing" 1.6e6
work2=$work
for p in 2.1.3 2.2.2; do # ranks_at's work: the plan's busiest node's
    work=$(num compute_s "$("$ROTOR" simulate --plan "$run4/sgd-mf.$p/plan" --app sgd-mf --rank 8 \
        --epochs 4 --rate 1 --gbps 0 --json)") || fail "the work of plan $p"
    ranks_at "$run4/kept/sgd-mf.$p.0.5.0/round.1" 0.4e6
    ranks_at "$run4/kept/sgd-mf.$p.0.5.0/closing" 0.4e6
done
work=$work2
ranks_at "$run4/kept/sgd-mf.2.1.2.1.0/round.1" 3.6e6
ranks_at "$run4/kept/sgd-mf.2.1.2.1.0/closing" 3.6e6
printf '%s\n' sgd-mf.2.1.2.0.5.0 sgd-mf.2.1.3.0.5.0 sgd-mf.2.2.2.0.5.0 sgd-mf.2.1.2.1.0 >"$run4/kept/ORDER"
# times_in_order NAME...: the kept directories' times, a minute apart, in this order
times_in_order() {
    local t=0 name
    for name in "$@"; do
        touch -d "@$((1700000000 + 60 * t++))" "$run4/kept/$name"
    done
}
times_in_order sgd-mf.2.1.2.1.0 sgd-mf.2.2.2.0.5.0 sgd-mf.2.1.3.0.5.0 sgd-mf.2.1.2.0.5.0
out=$(bash "$SCALE" --repredict "$run4" --model-args "--host-cores 2") || fail "repredict --busy-pool plan"
[ "$(echo "$out" | wc -l)" = 4 ] || fail "four kept configurations, four lines: $out"
ordered=$out
a=$(echo "$out" | head -n 1) b=$(echo "$out" | tail -n 1)
for cd in "2:1:3" "3:2:2"; do # line, threads, pipeline: each pools its own plan's two calibrations
    IFS=: read -r l t p <<<"$cd"
    c=$(echo "$out" | sed -n "${l}p")
    echo "$c" | grep -q "\"threads\": $t, \"pipeline\": $p, " || fail "line $l: want C and D in ORDER's place: $out"
    echo "$c" | grep -q '"busy_pool": "plan", "busy_pool_calibrations": 2, ' || fail "line $l: its plan's two calibrations: $c"
    awk -v x="$(list "$c" round_model_busy_core_speed)" 'BEGIN { gsub(/[][]/, "", x); exit !(x > 0.0999 && x < 0.1001) }' ||
        fail "line $l: busy 0.1, its own plan's: $c"
done
half=$(busy_epochs 0.5 0.5) # A's rounds at 2 M, busy 0.5, here and below
[ "$(list "$a" round_predicted_epoch_s)" = "$half" ] ||
    fail "--busy-pool plan, A: want busy 0.5 in both rounds ($half), got $a"
[ "$half" != "$(busy_epochs 0.612 0.548)" ] || fail "the test's speeds do not tell the pool apart"
[ "$(list "$b" round_predicted_epoch_s)" = "[$(busy_epochs 0.75 0.75 | sed 's/^\[\([^,]*\),.*/\1/')]" ] ||
    fail "--busy-pool plan, B: want busy 0.75, the plan's five calibrations, got $b"
echo "$a" | grep -q '"round_model_busy_core_speed": \[0.5, 0.5\], "busy_pool": "plan", "busy_pool_calibrations": 3, ' ||
    fail "A's line names its busy speeds and pool: $a"
echo "$b" | grep -q '"round_model_busy_core_speed": \[0.75\], "busy_pool": "plan", "busy_pool_calibrations": 5, ' ||
    fail "B's line names its busy speeds and pool: $b"
# rev27 F10: the per-worker factor each round's model drew is on the line
echo "$a" | grep -q '"round_worker_factor_cv": \[[0-9.]*, [0-9.]*\], ' ||
    fail "A's line names the model's per-worker factor: $a"
out=$(bash "$SCALE" --repredict "$run4" --busy-pool round --model-args "--host-cores 2") || fail "repredict --busy-pool round"
echo "$out" | head -n 1 | grep -q '"round_model_busy_core_speed": \[0.6124, 0.5477\], "busy_pool": "round", "busy_pool_calibrations": 0, ' ||
    fail "--busy-pool round: each round's pair: $out"
# without ORDER: the directories' times (here in the run's order), the same lines
mv "$run4/kept/ORDER" "$TMP/ORDER4"
times_in_order sgd-mf.2.1.2.0.5.0 sgd-mf.2.1.3.0.5.0 sgd-mf.2.2.2.0.5.0 sgd-mf.2.1.2.1.0
out=$(bash "$SCALE" --repredict "$run4" --model-args "--host-cores 2") || fail "repredict without ORDER"
mv "$TMP/ORDER4" "$run4/kept/ORDER"
[ "$out" = "$ordered" ] || fail "without kept/ORDER, the times' order: want the lines of the ORDER run, got $out"
# --rate-pool config: every round's --rate is the geometric mean of its
# configuration's calibrations' serial wall rates (round.1 1 M, round.2 4 M,
# closing 2 M: 2 M for both rounds), not the pair's (round 2: sqrt(4 x 2) =
# 2.83 M); B's, all 2 M, unchanged
sed -i 's/^2e6 /1e6 /' "$run4/kept/sgd-mf.2.1.2.0.5.0/round.1/calibration"
sed -i 's/^2e6 /4e6 /' "$run4/kept/sgd-mf.2.1.2.0.5.0/round.2/calibration"
out=$(bash "$SCALE" --repredict "$run4" --rate-pool config --model-args "--host-cores 2") || fail "repredict --rate-pool config"
a=$(echo "$out" | head -n 1)
[ "$(list "$a" round_predicted_epoch_s)" = "$half" ] ||
    fail "--rate-pool config: the configuration's rate, 2 M, in both rounds: want $half, got $a"
echo "$a" | grep -q '"rate_pool": "config"' || fail "--rate-pool config is named: $a"
out=$(bash "$SCALE" --repredict "$run4" --model-args "--host-cores 2") || fail "repredict, the pair's rate"
[ "$(list "$(echo "$out" | head -n 1)" round_predicted_epoch_s)" != "$half" ] ||
    fail "the test's rates do not tell --rate-pool config from the pair's: $out"
expect_status 2 bash "$SCALE" --repredict "$run4" --rate-pool all
grep -q 'round, config or plan' "$TMP/last.err" || fail "--rate-pool all: $(cat "$TMP/last.err")"
sed -i 's/^[14]e6 /2e6 /' "$run4"/kept/sgd-mf.2.1.2.0.5.0/round.[12]/calibration
# --rate-pool plan: every round's --rate is the median of the serial wall
# rates of its plan's calibrations so far ($TMP/plan_speeds.KEY's first
# column).  A's at 1, 4 and 2 M: 2 M in both rounds (the pair's: 2 and
# 2.83 M; the threaded or serial CPU rate's column: 3 or 4 M); B's at 3.6
# and 8 M: the median of the plan's five, 3.6 M (its configuration's or
# its pair's: 5.37 M); C and D, other plans, at 0.4 M are not pooled (with
# them B's would be 2 M).  The busy speeds stay the plan pool's, 0.5 and 0.75.
cfg4=$run4/kept/sgd-mf.2.1.2
sed -i 's/^2e6 /1e6 /' "$cfg4.0.5.0/round.1/calibration"
sed -i 's/^2e6 /4e6 /' "$cfg4.0.5.0/round.2/calibration"
sed -i 's/^2e6 /3.6e6 /' "$cfg4.1.0/round.1/calibration"
sed -i 's/^2e6 /8e6 /' "$cfg4.1.0/closing/calibration"
sed -i 's/^2e6 /4e5 /' "$run4"/kept/sgd-mf.2.{1.3,2.2}.0.5.0/*/calibration
out=$(bash "$SCALE" --repredict "$run4" --rate-pool plan --model-args "--host-cores 2") || fail "repredict --rate-pool plan"
a=$(echo "$out" | head -n 1) b=$(echo "$out" | tail -n 1)
want_a=$half want_b=$(speed_epochs "3.6e6 0.75")
[ "$(list "$a" round_predicted_epoch_s)" = "$want_a" ] ||
    fail "--rate-pool plan, A: the median of its plan's three, 2 M, in both rounds: want $want_a, got $a"
[ "$(list "$b" round_predicted_epoch_s)" = "$want_b" ] ||
    fail "--rate-pool plan, B: the median of its plan's five, 3.6 M: want $want_b, got $b"
echo "$b" | grep -q '"rate_pool": "plan"' || fail "--rate-pool plan is named: $b"
[ "$(speed_epochs "2e6 0.5" "2.82843e6 0.5")" != "$want_a" ] && [ "$(speed_epochs "3e6 0.5" "3e6 0.5")" != "$want_a" ] &&
    [ "$(speed_epochs "5.36656e6 0.75")" != "$want_b" ] && [ "$(speed_epochs "2e6 0.75")" != "$want_b" ] ||
    fail "the test's rates do not tell --rate-pool plan from the pair's, another column's, the configuration's or every plan's"
sed -i 's/^[0-9.]*e[56] /2e6 /' "$run4"/kept/*/*/calibration

# A round kept by this scale.sh with the pooled rule (model_terms
# speed:bracket+busy:plan) runs its kept command under that rule, and under
# --busy-pool round is given the pair's speed (speed:bracket is another
# term, not a part of this one).
echo "worker_cv_cpu speed:bracket+busy:plan" >"$run4/kept/sgd-mf.2.1.2.0.5.0/round.1/model_terms"
echo "/gone/rotor simulate --plan /gone/sgd-mf.2.1.2/plan ${model[*]} --rate 1e6 --busy-core-speed 0.3 --worker-cv 0" \
    >"$run4/kept/sgd-mf.2.1.2.0.5.0/round.1/simulate.cmd"
kept=$(num predicted_epoch_s "$("$ROTOR" simulate --plan "$run4/sgd-mf.2.1.2/plan" "${model[@]}" \
    --rate 1e6 --busy-core-speed 0.3 --worker-cv 0 --host-cores 2)") || fail "simulate, the kept command"
out=$(bash "$SCALE" --repredict "$run4" --model-args "--host-cores 2") || fail "repredict, a marked round"
a=$(echo "$out" | head -n 1)
[ "$(list "$a" round_predicted_epoch_s)" = "[$kept, ${half#*, }" ] ||
    fail "a round marked +busy:plan runs its kept command under the plan rule: want [$kept, ...], got $a"
echo "$a" | grep -q '"round_model_busy_core_speed": \[0.3, 0.5\]' || fail "the marked round's busy speed is its command's: $a"
out=$(bash "$SCALE" --repredict "$run4" --busy-pool round --model-args "--host-cores 2") ||
    fail "repredict --busy-pool round, a marked round"
a=$(echo "$out" | head -n 1)
[ "$(list "$a" round_predicted_epoch_s)" = "$(busy_epochs 0.6124 0.5477)" ] ||
    fail "a round marked +busy:plan is given the pair's speed under --busy-pool round: want $(busy_epochs 0.6124 0.5477), got $a"
expect_status 2 bash "$SCALE" --repredict "$run4" --busy-pool all
grep -q 'plan or round' "$TMP/last.err" || fail "--busy-pool all: $(cat "$TMP/last.err")"

# The model of the plan at rate 1 (the nodes' work, behind the ranks' rate
# and spread) failing: the repredict fails and says so, where it gave a
# ranks' rate of 0 that the speed rule skipped unsaid.
printf '#!/bin/sh\ncase " $* " in *" --rate 1 "*) echo "rotor: simulate: injected failure" >&2; exit 3 ;; esac\nexec "%s" "$@"\n' \
    "$ROTOR" >"$TMP/rotor1"
chmod +x "$TMP/rotor1"
expect_status 1 env ROTOR="$TMP/rotor1" bash "$SCALE" --repredict "$run3"
if ! grep -q 'at rate 1 .*failed' "$TMP/last.err" || ! grep -q 'injected failure' "$TMP/last.err"; then
    fail "a failed model at rate 1: $(cat "$TMP/last.err")"
fi

# A figure that cannot be had (a rotor whose simulate JSON lacks
# compute_gap_s, an older build given as ROTOR=) is null in the line, which
# stays JSON: nan is not JSON and broke every reader of the line.
printf '#!/bin/sh\n"%s" "$@" | sed %s\n' "$ROTOR" "'s/\"compute_gap_s\": [^,}]*//'" >"$TMP/rotor_old"
chmod +x "$TMP/rotor_old"
out=$(ROTOR="$TMP/rotor_old" bash "$SCALE" --repredict "$run") || fail "repredict with an older rotor"
echo "$out" | grep -q '"predicted_compute_gap_s": null' || fail "the missing gap is null: $out"
echo "$out" | python3 -c 'import json, sys; [json.loads(l) for l in sys.stdin]' ||
    fail "the lines are not JSON: $out"

mkdir -p "$TMP/empty"
expect_status 2 bash "$SCALE" --repredict "$TMP/empty"
grep -q 'no kept configurations' "$TMP/last.err" || fail "empty directory: $(cat "$TMP/last.err")"
echo "ok"
