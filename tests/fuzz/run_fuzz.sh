#!/bin/bash
# run_fuzz.sh TARGET NAME CORPUS REGRESS WORK - run one libFuzzer target
# (ctest label `fuzz`) for FUZZ_SECONDS (default 10), or for FUZZ_RUNS
# executions when that is set (bench/fuzz_long.sh), then capped by
# FUZZ_SECONDS only when that is set too; it starts from a scratch copy of
# its seed corpus plus its regression inputs, and the inputs it finds stay
# in WORK/corpus-NAME.  Any crash, leak, sanitizer report or timeout fails;
# the input is kept in WORK/artifacts/, the fuzzer's output in WORK/NAME.log.
set -u
target=$1 name=$2 corpus=$3 regress=$4 work=$5
mkdir -p "$work/corpus-$name" "$work/artifacts"
cp -n "$corpus"/* "$work/corpus-$name"/ 2>/dev/null
dirs=("$work/corpus-$name" "$corpus")
[ -d "$regress" ] && dirs+=("$regress")
if [ -n "${FUZZ_RUNS:-}" ]; then
    limit=(-runs="$FUZZ_RUNS")
    [ -n "${FUZZ_SECONDS:-}" ] && limit+=(-max_total_time="$FUZZ_SECONDS")
else
    limit=(-max_total_time="${FUZZ_SECONDS:-10}")
fi
log="$work/$name.log"
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
    "$target" "${limit[@]}" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 -max_len=4096 \
    -print_final_stats=1 -artifact_prefix="$work/artifacts/$name-" "${dirs[@]}" >"$log" 2>&1
rc=$?
runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
echo "fuzz $name: exit $rc, ${runs:-?} executions"
if [ $rc -ne 0 ]; then
    tail -40 "$log"
    exit 1
fi
