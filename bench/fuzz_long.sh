#!/bin/bash
# fuzz_long.sh [--runs N] [--targets a,b,...] [--max-seconds S] [--work DIR]
#              [--build DIR]
# The long local fuzz run (issue 11): every libFuzzer target of a build made
# with -DROTOR_FUZZ=ON (tools/run.sh test makes build-fuzz), one at a time,
# for N executions each (default 1,000,000), through tests/fuzz/run_fuzz.sh
# (seed corpus + regression inputs, -timeout=10, -rss_limit_mb=2048).
# --max-seconds caps a slow target (0: no cap).  The corpus each target
# grows and any crashing input stay in --work (default /tmp/rotor-fuzz-long,
# kept between runs, never committed).  One JSON line per target:
#   {"target": ..., "runs": ..., "seconds": ..., "exec_per_s": ...,
#    "crashes": 0|1, "artifact": path|null}
# Exit 1 when any target crashed.  Run it niced: nice -n 10 bench/fuzz_long.sh
source "$(dirname "$0")/lib.sh"
runs=1000000 targets=all max_seconds=0 work=/tmp/rotor-fuzz-long build=$ROOT/build-fuzz
bench_options 2,15 "$@"
fuzz=$build/tests/fuzz
[ -x "$fuzz/fuzz_shard" ] || bench_fail "no fuzz build in $build (configure with -DROTOR_FUZZ=ON)"
if [ "$targets" = all ]; then
    targets=$(cd "$ROOT/tests/fuzz/corpus" && ls | paste -sd,)
fi
mkdir -p "$work"
rc=0
for name in ${targets//,/ }; do
    [ -x "$fuzz/fuzz_$name" ] || bench_fail "no target fuzz_$name in $fuzz"
    before=$(ls "$work/artifacts" 2>/dev/null | grep -c "^$name-" || true)
    start=$(date +%s.%N)
    cap=()
    [ "$max_seconds" != 0 ] && cap=(FUZZ_SECONDS="$max_seconds")
    env FUZZ_RUNS="$runs" "${cap[@]}" bash "$ROOT/tests/fuzz/run_fuzz.sh" "$fuzz/fuzz_$name" \
        "$name" "$ROOT/tests/fuzz/corpus/$name" "$ROOT/tests/fuzz/regress/$name" "$work" \
        >/dev/null
    crashed=$?
    end=$(date +%s.%N)
    done_runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/$name.log" |
        grep -o '[0-9]*$' | tail -1)
    artifact=$(ls -t "$work/artifacts" 2>/dev/null | grep "^$name-" | head -1)
    after=$(ls "$work/artifacts" 2>/dev/null | grep -c "^$name-" || true)
    if [ "$crashed" != 0 ] && [ -z "$done_runs" ]; then
        # A crash ends libFuzzer before its final stats: count from the log.
        done_runs=$(grep -o '^#[0-9]*' "$work/$name.log" | tail -1 | tr -d '#')
    fi
    [ "$after" -gt "$before" ] && artifact="\"$work/artifacts/$artifact\"" || artifact=null
    [ "$crashed" != 0 ] && rc=1
    seconds=$(awk -v s="$start" -v e="$end" 'BEGIN {printf "%.1f", e - s}')
    rate=$(awk -v r="${done_runs:-0}" -v s="$start" -v e="$end" 'BEGIN {printf "%.0f", r / (e - s)}')
    printf '{"target": "%s", "runs": %d, "seconds": %s, "exec_per_s": %s, "crashes": %d, "artifact": %s}\n' \
        "$name" "${done_runs:-0}" "$seconds" "$rate" "$((crashed != 0))" "$artifact"
done
exit $rc
