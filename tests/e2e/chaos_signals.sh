#!/usr/bin/env bash
# chaos_signals.sh - signals to a 3-rank job under rotor launch, mid-run:
#  1. SIGINT to the launcher (Ctrl-C): every rank stops, the launcher exits
#     130 (128 + SIGINT) and --out is not made;
#  2. SIGTERM to one rank: it exits 143, every other rank exits non-zero
#     naming it, the launcher exits 1 (a rank killed by a signal, as
#     documented) within 10 s;
#  3. SIGKILL to the launcher: no rank outlives it (PR_SET_PDEATHSIG).
# In every case no process of the job is left (no orphans).  (SIGTERM and
# SIGHUP to the launcher: interrupt.sh; SIGKILL and SIGSTOP of a rank at
# each phase: chaos_phases.sh.)
source "$(dirname "$0")/lib.sh"
export ROTOR_LOG=info

"$ROTOR" gen mf --rows 6000 --cols 1500 --nnz 150000 --rank 8 --noise 0.1 --seed 3 \
    --out "$TMP/r.txt" 2>/dev/null || fail "gen mf"
"$ROTOR" partition --input "$TMP/r.txt" --nodes 3 --threads 1 --seed 3 --out "$TMP/plan" \
    >/dev/null 2>&1 || fail "partition"
job=(train --plan "$TMP/plan" --app sgd-mf --rank 32 --seed 3 --epochs 1000000)

# The processes whose command line names this test's plan: the job's ranks.
job_pids() { pgrep -f -- "--plan $TMP/plan" || true; }

# start NAME: the launcher in the background ($launcher), once every rank trains.
start() {
    "$ROTOR" launch -n 3 -- "$ROTOR" "${job[@]}" --out "$TMP/$1" >"$TMP/$1.log" 2>&1 &
    launcher=$!
    for _ in $(seq 600); do
        [ "$(grep -c 'epoch ' "$TMP/$1.log")" -ge 2 ] && return 0
        kill -0 $launcher 2>/dev/null || break
        sleep 0.1
    done
    cat "$TMP/$1.log" >&2
    fail "$1: training never started"
}

# finish NAME LIMIT: the launcher's exit status in $st; fail when it or any rank runs past LIMIT s.
finish() {
    local t0=$SECONDS
    timeout "$2" tail --pid=$launcher -f /dev/null ||
        { cat "$TMP/$1.log" >&2; fail "$1: the launcher still runs after $2 s"; }
    st=0
    wait $launcher || st=$?
    for _ in $(seq 20); do [ -z "$(job_pids)" ] && break; sleep 0.1; done
    [ -z "$(job_pids)" ] || { ps -o pid,stat,args -p "$(job_pids | tr '\n' ,)0" >&2; fail "$1: ranks left"; }
    note "$1: launcher exited $st after $((SECONDS - t0)) s"
}

note "1. SIGINT to the launcher"
start int
kill -INT $launcher
finish int 15
[ "$st" = 130 ] || { cat "$TMP/int.log" >&2; fail "SIGINT: the launcher exited $st, want 130"; }
[ ! -e "$TMP/int" ] || fail "SIGINT: --out was left"
for r in 0 1 2; do
    grep -q "^\[$r\] rotor: interrupted" "$TMP/int.log" || fail "SIGINT: rank $r did not say so"
done

note "2. SIGTERM to rank 1"
start term
mapfile -t ranks < <(ps --ppid $launcher -o pid= | sort -n)
kill -TERM "${ranks[1]}"
finish term 10
[ "$st" = 1 ] || { cat "$TMP/term.log" >&2; fail "SIGTERM to rank 1: the launcher exited $st, want 1"; }
grep -q '^\[1\] rotor: interrupted (Terminated)' "$TMP/term.log" || fail "rank 1 did not say it was terminated"
grep -q 'rotor launch: rank 1 killed by signal 15' "$TMP/term.log" || fail "the launcher does not name rank 1"
for r in 0 2; do
    grep -Eq "^\[$r\] rotor: error: .*rank 1[ :]" "$TMP/term.log" ||
        { cat "$TMP/term.log" >&2; fail "rank $r does not name rank 1"; }
done
[ ! -e "$TMP/term" ] || fail "SIGTERM to rank 1: --out was left"

note "3. SIGKILL to the launcher"
start killed
kill -KILL $launcher
finish killed 5
echo PASS
