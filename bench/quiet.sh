#!/usr/bin/env bash
# quiet.sh - the end-of-session quiet measurements in one command: issue
# 16's shaped 17-row validation (bench/scale.sh) --scale-runs times and
# issue 13's LDA runs beside WarpLDA (bench/lda.sh, K = 1000 and 10000),
# each JSON in --out DIR, then bench/table.py's tables of them.
#
#   bench/quiet.sh [--out DIR] [--dry-run] [--build]
#                  [--scale-runs 2] [--scale-configs LIST] [--scale-rounds 3]
#                  [--scale-size large] [--scale-args "ARGS"]
#                  [--lda-runs 1000:2,10000:1] [--lda-corpora kos,ap,synthetic]
#                  [--lda-samplers auto] [--lda-ll-iters 5,10,20,30,50] [--lda-args "ARGS"]
#                  [--lock /tmp/rotor-bench.lock] [--nice -20]
#
# Every measurement holds the bench lock for itself alone (flock --lock,
# then nice --nice and the autogroup's nice: the BRIEF's command), so other
# work queued on the lock runs between them, and the machine should be
# otherwise quiet.  The commands are the closing notes' (2026-11-27):
#   bench/scale.sh --size large --rounds 3 --keep --configs <the 17 rows>
#   bench/lda.sh --corpora kos,ap,synthetic --topics K --samplers auto
#                --rounds R --ll-iters 5,10,20,30,50
# with --lda-runs K:R,... (each K once; default 1000:2,10000:1).  Order:
# scale run 1, the LDA runs, then scale runs 2.. (a session cut short still
# has one of each; ~21 min per scale run and ~12 min of LDA here, ~55 min
# in all).
# --scale-runs 0 or --lda-runs "" leaves that part out; --scale-args and
# --lda-args are added to each such command (e.g. --lda-args
# "--iters 4 --ll-iters 2,4 --no-warplda" for a check).
# DIR (default a new /tmp/quiet.XXXXXX) gets scaleI.json / kK.json with
# each one's stderr beside it (.err), "times" (start, end, exit status and
# load average of each), "commit" (the tree's HEAD and rotor --version),
# "kept" (scale.sh's kept directory per run, for --repredict) and
# tables.md: bench/table.py scale of each run, of all runs together (each
# row's spread), and bench/table.py lda of the LDA runs, also printed on
# stdout.  A failed measurement (or an LDA run without WarpLDA) is logged
# and the others still run; the exit status is then 1.  --dry-run prints
# the commands and runs nothing; --build runs tools/run.sh build first
# (outside the lock).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
SCALE_17=sgd-mf:2:0.25,sgd-mf:2:0.5,sgd-mf:2:1,sgd-mf:2:5,sgd-mf:4:0.25,sgd-mf:4:1,sgd-mf:8:0.5,sgd-mf:8:1
SCALE_17+=,sgd-mf:8:5,sgd-mf:2:0.5:2,sgd-mf:2:1:1:2:200,sgd-mf:2:1:1:2:1000,sgd-mf:4:1:1:2:1000
SCALE_17+=,lda:2:0.25,lda:4:1,lda:8:1,lda:2:1:1:2:1000
out="" dry_run=0 build=0 scale_runs=2 scale_configs=$SCALE_17 scale_rounds=3 scale_size=large scale_args=""
lda_runs=1000:2,10000:1 lda_corpora=kos,ap,synthetic lda_samplers=auto lda_ll_iters=5,10,20,30,50 lda_args=""
lock=/tmp/rotor-bench.lock nice=-20
BENCH_FLAGS=([dry-run]=dry_run=1 [build]=build=1)
bench_options 2,36 "$@"
[[ $scale_runs =~ ^[0-9]+$ ]] || bench_fail "--scale-runs is a count, not $scale_runs"
[[ $nice =~ ^-?[0-9]+$ ]] || bench_fail "--nice is a niceness, not $nice"
[[ $lda_runs =~ ^([1-9][0-9]*:[1-9][0-9]*(,[1-9][0-9]*:[1-9][0-9]*)*)?$ ]] ||
    bench_fail "--lda-runs is K:ROUNDS,..., not $lda_runs"
# one run per K: its JSON is named kK.json (give a K more rounds instead)
twice=$(tr , '\n' <<<"$lda_runs" | cut -d: -f1 | sort | uniq -d | head -n 1)
[ -z "$twice" ] || bench_fail "--lda-runs names K = $twice twice (one K:ROUNDS per K)"
[ "$scale_runs" -gt 0 ] || [ -n "$lda_runs" ] || bench_fail "nothing to run (--scale-runs 0, --lda-runs \"\")"

# say WORD...: the words as one shell command line, a word in single quotes
# when it holds more than letters, digits and _./:,=+@%- (or is empty).
say() {
    local w q="'\\''" words=()
    for w; do
        if [[ $w =~ ^[-A-Za-z0-9_./:,=+@%]+$ ]]; then words+=("$w"); else words+=("'${w//\'/$q}'"); fi
    done
    echo "${words[*]}"
}
# locked CMD...: the argument list that runs CMD under the bench lock at
# --nice, its autogroup too: the BRIEF's flock command, so that --dry-run
# prints what one would type.
locked() {
    local script
    script="echo $nice > /proc/\$\$/autogroup; exec nice -n $nice $(say "$@")"
    locked_cmd=(flock "$lock" bash -c "$script")
}
# shown_locked: locked_cmd as one line, the script in single quotes.
shown_locked() {
    local q="'\\''" script=${locked_cmd[4]}
    echo "$(say flock "$lock") bash -c '${script//\'/$q}'"
}

# measure NAME CMD...: CMD's JSON in DIR/NAME.json, its stderr in NAME.err,
# its times in DIR/times; a failure is logged, not fatal (status=1).
status=0
measure() {
    local name=$1 rc=0
    shift
    locked "$@"
    if [ "$dry_run" = 1 ]; then
        echo "$(shown_locked) >$out/$name.json 2>$out/$name.err"
        return
    fi
    echo "$(date -u +%T) start $name load $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/times"
    echo "quiet.sh: $(date -u +%T) $name: $(say "$@")" >&2
    "${locked_cmd[@]}" >"$out/$name.json" 2>"$out/$name.err" || rc=$?
    echo "$(date -u +%T) end $name rc=$rc load $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/times"
    if [ "$rc" != 0 ]; then
        echo "quiet.sh: $name failed (exit $rc): $(tail -n 2 "$out/$name.err")" >&2
        status=1
    fi
}

scale_run() { # I
    # shellcheck disable=SC2086 # --scale-args is a list of words
    measure "scale$1" "$ROOT/bench/scale.sh" --size "$scale_size" --rounds "$scale_rounds" --keep \
        --configs "$scale_configs" $scale_args
}
lda_run() { # K ROUNDS
    # shellcheck disable=SC2086 # --lda-args is a list of words
    measure "k$1" "$ROOT/bench/lda.sh" --corpora "$lda_corpora" --topics "$1" --samplers "$lda_samplers" \
        --rounds "$2" --ll-iters "$lda_ll_iters" $lda_args
    # lda.sh runs rotor alone when WarpLDA does not build: issue 13's ratios
    # are then missing, which must not pass unnoticed in a quiet window.
    if [ "$dry_run" = 0 ] && grep -q "WarpLDA not available" "$out/k$1.err"; then
        echo "quiet.sh: k$1 ran without WarpLDA (no ratios): see $out/k$1.err" >&2
        status=1
    fi
}

# table HEADING KIND JSON...: bench/table.py KIND of the JSON under
# "## HEADING"; with --dry-run the command alone.
table() {
    local heading=$1
    shift
    if [ "$dry_run" = 1 ]; then
        say python3 "$ROOT/bench/table.py" "$@"
        return
    fi
    echo && echo "## $heading" && echo
    python3 "$ROOT/bench/table.py" "$@" 2>&1 || true
}
# tables: bench/table.py's tables of the JSON made (with --dry-run their
# commands), on stdout.
tables() {
    local scale=() lda=() i k
    for ((i = 1; i <= scale_runs; i++)); do scale+=("$out/scale$i.json"); done
    for k in ${lda_runs//,/ }; do lda+=("$out/k${k%%:*}.json"); done
    [ "$dry_run" = 1 ] || echo "# quiet.sh on $(head -n 1 "$out/commit")"
    for i in "${!scale[@]}"; do
        table "scale run $((i + 1)) (kept $([ "$dry_run" = 1 ] || sed -n "$((i + 1))p" "$out/kept"))" \
            scale "${scale[i]}"
    done
    [ ${#scale[@]} -lt 2 ] || table "scale: the ${#scale[@]} runs' spread" scale "${scale[@]}"
    [ ${#lda[@]} = 0 ] || table "LDA beside WarpLDA" lda "${lda[@]}"
}

if [ "$dry_run" = 1 ]; then
    out=${out:-/tmp/quiet.XXXXXX}
    if [ "$build" = 1 ]; then say "$ROOT/tools/run.sh" build; fi
else
    command -v python3 >/dev/null || bench_fail "needs python3"
    if [ -n "$out" ]; then mkdir -p "$out"; else out=$(mktemp -d /tmp/quiet.XXXXXX); fi
    out=$(realpath "$out")
    [ "$build" = 0 ] || "$ROOT/tools/run.sh" build >"$out/build.log" 2>&1 ||
        bench_fail "tools/run.sh build failed: see $out/build.log"
    [ -x "$ROTOR" ] || bench_fail "build first: tools/run.sh build (no $ROTOR)"
    { git -C "$ROOT" log --oneline -1 2>/dev/null || echo "(no git)"; "$ROTOR" --version | head -n 1; } >"$out/commit"
    echo "quiet.sh: results in $out" >&2
fi

[ "$scale_runs" = 0 ] || scale_run 1
for k in ${lda_runs//,/ }; do lda_run "${k%%:*}" "${k#*:}"; done
for ((i = 2; i <= scale_runs; i++)); do scale_run "$i"; done
if [ "$dry_run" = 0 ]; then
    for ((i = 1; i <= scale_runs; i++)); do
        grep -o 'scale.sh: kept .*' "$out/scale$i.err" | sed 's/scale.sh: kept //' | tail -n 1 || echo "-"
    done >"$out/kept"
fi
if [ "$dry_run" = 1 ]; then
    tables
else
    tables >"$out/tables.md"
    cat "$out/tables.md"
fi
exit "$status"
