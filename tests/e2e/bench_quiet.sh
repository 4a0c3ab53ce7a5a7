#!/usr/bin/env bash
# bench/quiet.sh: --dry-run prints the closing notes' quiet measurements
# (the 17-row bench/scale.sh validation --scale-runs times, bench/lda.sh at
# K = 1000 with 2 rounds and 10000 with 1), each under the bench lock at
# nice -20 as the BRIEF types it, in the order scale 1, LDA, scale 2.., then
# bench/table.py's commands, and runs nothing; a tiny real run (a small
# corpus in place of KOS, a private lock, nice 0) writes each JSON, the
# times, the kept list and tables.md, and a failed measurement is logged
# while the others still run (exit 1).
source "$(dirname "$0")/lib.sh"
: "${ROTOR_SRC:?ROTOR_SRC must point at the source tree}"
command -v python3 >/dev/null || skip "no python3: bench/quiet.sh not checked"
[ -x /usr/bin/time ] || skip "no GNU time: bench/lda.sh cannot run"
command -v flock >/dev/null || skip "no flock"
command -v cc >/dev/null || skip "no cc: bench/lda.sh builds lda_ll.c"
quiet=$ROTOR_SRC/bench/quiet.sh
rows=sgd-mf:2:0.25,sgd-mf:2:0.5,sgd-mf:2:1,sgd-mf:2:5,sgd-mf:4:0.25,sgd-mf:4:1,sgd-mf:8:0.5,sgd-mf:8:1,sgd-mf:8:5
rows+=,sgd-mf:2:0.5:2,sgd-mf:2:1:1:2:200,sgd-mf:2:1:1:2:1000,sgd-mf:4:1:1:2:1000,lda:2:0.25,lda:4:1,lda:8:1
rows+=,lda:2:1:1:2:1000
lock="flock /tmp/rotor-bench.lock bash -c 'echo -20 > /proc/\$\$/autogroup; exec nice -n -20"
scale="$lock $ROTOR_SRC/bench/scale.sh --size large --rounds 3 --keep --configs $rows'"
lda="$lock $ROTOR_SRC/bench/lda.sh --corpora kos,ap,synthetic --topics"

"$quiet" --dry-run --out "$TMP/q" >"$TMP/dry.txt" 2>"$TMP/dry.err" || fail "--dry-run: exit $?: $(cat "$TMP/dry.err")"
cat >"$TMP/want.txt" <<EOF
$scale >$TMP/q/scale1.json 2>$TMP/q/scale1.err
$lda 1000 --samplers auto --rounds 2 --ll-iters 5,10,20,30,50' >$TMP/q/k1000.json 2>$TMP/q/k1000.err
$lda 10000 --samplers auto --rounds 1 --ll-iters 5,10,20,30,50' >$TMP/q/k10000.json 2>$TMP/q/k10000.err
$scale >$TMP/q/scale2.json 2>$TMP/q/scale2.err
python3 $ROTOR_SRC/bench/table.py scale $TMP/q/scale1.json
python3 $ROTOR_SRC/bench/table.py scale $TMP/q/scale2.json
python3 $ROTOR_SRC/bench/table.py scale $TMP/q/scale1.json $TMP/q/scale2.json
python3 $ROTOR_SRC/bench/table.py lda $TMP/q/k1000.json $TMP/q/k10000.json
EOF
diff "$TMP/want.txt" "$TMP/dry.txt" >&2 || fail "--dry-run: not the commands above"
[ ! -e "$TMP/q" ] || fail "--dry-run made $TMP/q"
# The printed line is one shell command: its words give back the script.
eval "set -- $(head -n 1 "$TMP/dry.txt" | sed 's| >/.*||')"
[ $# = 5 ] && [ "$1 $3 $4" = "flock bash -c" ] &&
    [ "$5" = "echo -20 > /proc/\$\$/autogroup; exec nice -n -20 $ROTOR_SRC/bench/scale.sh --size large --rounds 3 --keep --configs $rows" ] ||
    fail "first line's words: $*"
[ "$("$quiet" --dry-run --scale-runs 3 | grep -c "bench/scale.sh")" = 3 ] || fail "--scale-runs 3"

# a K given twice would write kK.json twice (rev26 F8)
expect_status 2 "$quiet" --dry-run --lda-runs 1000:2,10000:1,1000:1
grep -q "K = 1000 twice" "$TMP/last.err" || fail "--lda-runs with K = 1000 twice: $(cat "$TMP/last.err")"
for bad in "--scale-runs x" "--lda-runs 1000" "--lda-runs 1000:0" "--scale-runs 0 --lda-runs ''" "--nice high" "--no-such 1"; do
    eval "set -- $bad"
    expect_status 2 "$quiet" --dry-run "$@"
done

# A tiny real run: bench/lda.sh on a 200-document corpus given as KOS, K = 20
# and 40, 4 iterations; scale.sh given a bad option fails at once, and the
# LDA runs between its two runs still run (WarpLDA missing: said).
tiny_kos "$TMP/data"
rc=0
WARPLDA=$TMP/no-warplda ROTOR_DATA_DIR=$TMP/data "$quiet" --out "$TMP/run" --lock "$TMP/lock" --nice 0 --scale-runs 2 \
    --scale-args "--no-such-option 1" --lda-runs 20:1,40:1 --lda-corpora kos --lda-ll-iters 2,4 \
    --lda-args "--iters 4" >"$TMP/run.out" 2>"$TMP/run.err" || rc=$?
[ "$rc" = 1 ] || { cat "$TMP/run.err" >&2; fail "real run: exit $rc, not 1 (a scale run failed)"; }
grep -q "scale1 failed (exit 2)" "$TMP/run.err" || fail "real run: $(cat "$TMP/run.err")"
grep -q "k20 ran without WarpLDA" "$TMP/run.err" || fail "no WarpLDA not said: $(cat "$TMP/run.err")"
[ "$(awk '$2 == "end" { print $3, $4 }' "$TMP/run/times" | tr '\n' ' ')" = \
    "scale1 rc=2 k20 rc=0 k40 rc=0 scale2 rc=2 " ] || fail "times: $(cat "$TMP/run/times")"
[ "$(cat "$TMP/run/kept")" = "$(printf -- '-\n-')" ] || fail "kept: $(cat "$TMP/run/kept")"
for K in 20 40; do
    python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
assert d["benchmark"] == "lda" and d["results"][0]["topics"] == int(sys.argv[2]), d' \
        "$TMP/run/k$K.json" "$K" || fail "k$K.json"
    grep -q "^| UCI KOS | $K | dense (auto) | - (" "$TMP/run/tables.md" || fail "tables.md: no K = $K row"
done
grep -qx "## scale run 1 (kept -)" "$TMP/run/tables.md" || fail "tables.md: $(cat "$TMP/run/tables.md")"
cmp -s "$TMP/run.out" "$TMP/run/tables.md" || fail "stdout is not tables.md"
grep -q "rotor " "$TMP/run/commit" || fail "commit: $(cat "$TMP/run/commit")"
echo PASS
