#!/usr/bin/env bash
# launch_test.sh - `rotor launch`: rank-prefixed whole lines, environment and
# hostfile, exit status propagation, and no rank left behind when one fails.
set -u
ROTOR=${ROTOR:?set ROTOR to the rotor binary}
work=$(mktemp -d "${TMPDIR:-/tmp}/rotor-launch-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

# 1. Usage.
grep -q "usage: rotor launch" <<<"$("$ROTOR" launch --help)" || fail "--help"
"$ROTOR" launch >/dev/null 2>&1; [ $? -eq 2 ] || fail "no arguments should exit 2"
"$ROTOR" launch -n 0 -- true >/dev/null 2>&1; [ $? -eq 2 ] || fail "-n 0 should exit 2"

# 2. Prefixes, streams, environment, hostfile, stdin from /dev/null.
timeout 60 "$ROTOR" launch -n 3 -- sh -c '
    echo "out $ROTOR_RANK/$ROTOR_SIZE local $ROTOR_LOCAL_RANK"
    echo "err $ROTOR_RANK" >&2
    [ "$ROTOR_RANK" = 0 ] && { cat "$ROTOR_HOSTFILE"; echo "hostfile $ROTOR_HOSTFILE"; }
    cat   # stdin must be /dev/null, so this returns at once
    printf "partial $ROTOR_RANK"' >"$work/out" 2>"$work/err"
rc=$?
[ $rc -eq 0 ] || fail "all ranks ok but launch exited $rc"
for r in 0 1 2; do
    grep -qx "\[$r\] out $r/3 local $r" "$work/out" || fail "stdout line of rank $r"
    grep -qx "\[$r\] err $r" "$work/err" || fail "stderr line of rank $r"
    grep -qx "\[$r\] partial $r" "$work/out" || fail "partial last line of rank $r"
done
n=$(grep -cE '^\[0\] 127\.0\.0\.1:[0-9]+$' "$work/out")
[ "$n" -eq 3 ] || fail "hostfile should have 3 loopback entries, has $n"
ports=$(grep -E '^\[0\] 127\.0\.0\.1:' "$work/out" | sort -u | wc -l)
[ "$ports" -eq 3 ] || fail "hostfile ports are not distinct"
hf=$(sed -n 's/^\[0\] hostfile //p' "$work/out")
[ -n "$hf" ] && [ ! -e "$hf" ] || fail "temporary hostfile $hf not removed"

# 2b. A ROTOR_TOKEN already set reaches the ranks whole (it was cut at 79
# bytes); one longer than a secret may be (4095 bytes) is refused, exit 2.
long=$(printf 'k%.0s' $(seq 300))
got=$(ROTOR_TOKEN=$long timeout 60 "$ROTOR" launch -n 2 -- sh -c 'printf "%s\n" "$ROTOR_TOKEN"' |
    sed 's/^\[[01]\] //' | sort -u)
[ "$got" = "$long" ] || fail "ROTOR_TOKEN of 300 bytes reached the ranks as ${#got} bytes"
ROTOR_TOKEN=$(printf 'k%.0s' $(seq 4096)) "$ROTOR" launch -n 2 -- true >/dev/null 2>"$work/err"
rc=$?
[ $rc -eq 2 ] && grep -q "ROTOR_TOKEN is 4096 bytes" "$work/err" ||
    fail "a 4096-byte ROTOR_TOKEN: exit $rc, $(cat "$work/err")"

# 3. Many concurrent lines are never torn or mixed.
timeout 60 "$ROTOR" launch -n 3 -- sh -c '
    i=0; while [ $i -lt 2000 ]; do
        echo "line $i of rank $ROTOR_RANK xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"; i=$((i+1))
    done' >"$work/many" 2>&1 || fail "many lines: launch failed"
bad=$(grep -cvE '^\[([0-2])\] line [0-9]+ of rank \1 x{48}$' "$work/many")
[ "$bad" -eq 0 ] || fail "$bad torn or mislabelled lines"
total=$(wc -l <"$work/many")
[ "$total" -eq 6000 ] || fail "expected 6000 lines, got $total"

# 4. One rank fails: its status is the launcher's, and nobody is left running.
timeout 60 "$ROTOR" launch -n 3 -- sh -c '
    echo $$ > "'"$work"'/pid.$ROTOR_RANK"
    if [ "$ROTOR_RANK" = 1 ]; then sleep 0.5; exit 3; fi
    exec sleep 120' >"$work/out4" 2>"$work/err4"
rc=$?
[ $rc -eq 3 ] || fail "a rank exited 3 but launch exited $rc"
grep -q "rotor launch: rank 1 exited with status 3" "$work/err4" || fail "failure not reported"
for r in 0 2; do
    pid=$(cat "$work/pid.$r" 2>/dev/null)
    [ -n "$pid" ] || { fail "rank $r did not start"; continue; }
    if kill -0 "$pid" 2>/dev/null; then fail "rank $r (pid $pid) still running"; kill -9 "$pid"; fi
done

# 5. A rank killed by a signal: exit status 1, signal reported.
timeout 60 "$ROTOR" launch -n 2 -- sh -c '
    if [ "$ROTOR_RANK" = 0 ]; then kill -9 $$; fi; exec sleep 120' >/dev/null 2>"$work/err5"
rc=$?
[ $rc -eq 1 ] || fail "a rank killed by a signal, launch exited $rc"
grep -q "rank 0 killed by signal 9" "$work/err5" || fail "signal not reported"

# 6. SIGTERM to the launcher reaches the ranks.
"$ROTOR" launch -n 2 -- sh -c 'echo $$ > "'"$work"'/tpid.$ROTOR_RANK"; exec sleep 120' \
    >/dev/null 2>&1 &
lp=$!
for _ in $(seq 100); do [ -s "$work/tpid.0" ] && [ -s "$work/tpid.1" ] && break; sleep 0.1; done
kill -TERM $lp
for _ in $(seq 150); do kill -0 $lp 2>/dev/null || break; sleep 0.1; done
if kill -0 $lp 2>/dev/null; then fail "launcher ignored SIGTERM"; kill -9 $lp; fi
wait $lp; rc=$?
[ $rc -ne 0 ] || fail "launcher terminated by SIGTERM exited 0"
for r in 0 1; do
    pid=$(cat "$work/tpid.$r" 2>/dev/null)
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then fail "rank $r survived SIGTERM"; kill -9 "$pid"; fi
done

# 7. A command that cannot run.
"$ROTOR" launch -n 2 -- /nonexistent/cmd >/dev/null 2>"$work/err7"; rc=$?
[ $rc -eq 127 ] || fail "missing command: exit $rc, expected 127"
grep -q "cannot run '/nonexistent/cmd'" "$work/err7" || fail "missing command not explained"

[ $fails -eq 0 ] && echo "launch_test: all ok"
exit $((fails > 0))
