#!/usr/bin/env bash
# chaos.sh - every combination of tests/e2e/chaos_phases.sh (the test suite
# runs 9): SIGKILL, SIGSTOP and SIGTERM to rank 0 or 1 of a 2-rank job once
# it listens (SIGSTOP only: a rank gone before anyone reached it is waited
# for the 30 s connect timeout), in the handshake, as training starts, while
# a checkpoint is written and while the model is saved, each --rounds times,
# each trial its own run of the script.  Prints one JSON object; exits 1
# when any trial failed (their output is kept under /tmp/rotor-chaos.*).
#   bench/chaos.sh [--rounds 1] [--kinds kill,stop,term]
#                  [--phases listen,connect,start,ckpt,save]
source "$(dirname "$0")/lib.sh"
rounds=1 kinds=kill,stop,term phases=listen,connect,start,ckpt,save
bench_options 2,10 "$@"
export ROTOR
export ROTOR_BUILD=${ROTOR_BUILD:-$ROOT/build} ROTOR_SRC=$ROOT
keep=$(mktemp -d /tmp/rotor-chaos.XXXXXX)
passed=0 failed=() t0=$SECONDS
for ((i = 0; i < rounds; i++)); do
    for k in ${kinds//,/ }; do
        for p in ${phases//,/ }; do
            [ "$p" != listen ] || [ "$k" = stop ] || continue
            for v in 0 1; do
                t=$k:$p:$v
                if bash "$ROOT/tests/e2e/chaos_phases.sh" "$t" >"$keep/$t.$i.log" 2>&1; then
                    passed=$((passed + 1))
                    rm -f "$keep/$t.$i.log"
                else
                    failed+=("\"$t\"")
                fi
            done
        done
    done
done
IFS=,
printf '{"trials": %d, "passed": %d, "failed": [%s], "seconds": %d, "load": "%s", "logs": "%s"}\n' \
    $((passed + ${#failed[@]})) $passed "${failed[*]}" $((SECONDS - t0)) \
    "$(cut -d' ' -f1-3 /proc/loadavg)" "$keep"
[ ${#failed[@]} -eq 0 ] && rmdir "$keep"
[ ${#failed[@]} -eq 0 ]
