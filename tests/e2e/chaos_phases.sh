#!/usr/bin/env bash
# chaos_phases.sh [TRIAL...]: one rank of a 2-rank sgd-mf job (started by
# hand, as mpirun or srun would: no launcher ends a stopped rank) gets a
# signal at one phase of the run.  A trial is KIND:PHASE:VICTIM:
#   KIND   kill (SIGKILL), stop (SIGSTOP) or term (SIGTERM)
#   PHASE  listen in the start-up: the victim is signalled once it listens,
#                 and the other started then (stop only: a rank killed
#                 before it is reached cannot be told from one not started,
#                 which is waited for the connect timeout, 30 s)
#          connect  in the handshake: once a connection to the victim's port
#                 is up (ss)
#          start  as training begins (rank 0's first log line)
#          ckpt   while the second checkpoint's state files are written
#          save   while the final model's parts are written
#   (The job-end agreement lasts a barrier, too short to catch from outside:
#   job_end.sh fails and kills a rank there from inside, by its last write.)
#   VICTIM 0 or 1
# Each trial passes when
#   - the other rank exits non-zero within the bound (10 s after a kill or a
#     SIGTERM, the peer timeout + 6 s after a stop, 35 s in the connect
#     phase) with an error naming the victim, and a SIGTERMed victim exits 143 (128 + 15);
#   - --out, which held a model of an earlier run, holds a complete model
#     (rotor eval accepts it): the earlier one or this run's, never a torn one;
#   - the newest complete checkpoint (when there is one) resumes to a model
#     bit-identical to the uninterrupted run's, and the resumed run (the same
#     command with --resume) leaves no temporary anywhere, also none of what
#     a killed rank left.
# With no arguments, the suite's set; bench/chaos.sh runs every combination.
source "$(dirname "$0")/lib.sh"
export ROTOR_LOG=info
PEER_TIMEOUT=4
if [ $# -gt 0 ]; then
    TRIALS=("$@")
else
    TRIALS=(kill:start:1 kill:ckpt:0 kill:save:1 term:ckpt:1 term:save:0
            stop:listen:0 stop:listen:1 stop:ckpt:1 stop:save:0)
fi

"$ROTOR" gen mf --rows 12000 --cols 3000 --nnz 600000 --rank 8 --noise 0.1 --seed 3 \
    --out "$TMP/r.txt" --test-out "$TMP/t.txt" --test-fraction 0.05 2>/dev/null || fail "gen mf"
"$ROTOR" partition --input "$TMP/r.txt" --nodes 2 --threads 1 --seed 3 --out "$TMP/plan" \
    >/dev/null 2>&1 || fail "partition"
# rank 96: each rank's state is a few MiB, so its writes last long enough to be caught
job=(train --plan "$TMP/plan" --app sgd-mf --rank 96 --seed 3 --epochs 6 --peer-timeout $PEER_TIMEOUT)

note "the uninterrupted run"
"$ROTOR" launch -n 2 -- "$ROTOR" "${job[@]}" --out "$TMP/ref" >"$TMP/ref.log" 2>&1 ||
    { cat "$TMP/ref.log" >&2; fail "the uninterrupted run failed"; }
single "$TMP/ref"

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

# until_seen PID GLOB...: poll until a GLOB matches (0) or PID ends (1), 60 s at most.
until_seen() {
    local pid=$1 g end=$((SECONDS + 60))
    shift
    while [ $SECONDS -lt $end ]; do
        for g in "$@"; do compgen -G "$g" >/dev/null && return 0; done
        kill -0 "$pid" 2>/dev/null || return 1
    done
    return 1
}

# Where PHASE begins, as globs of what the job has made by then ($D: the trial's directory).
phase_globs() {
    case $1 in
    listen) echo "$D/log$victim" ;; # signalled already
    connect | start) echo "$D/log0.seen" ;;
    ckpt) echo "$D/ck/ckpt-000000000004/*.tmp*" "$D/ck/ckpt-000000000004/state-*" ;;
    save) echo "$D/out.tmp-*-r$2" ;;
    esac
}

# watch_listen PORT PID: return once PORT is listening (1 when PID ended first).
watch_listen() {
    local port=$1 pid=$2
    until ss -ltnH "( sport = :$port )" 2>/dev/null | grep -q .; do
        kill -0 "$pid" 2>/dev/null || return 1
    done
}

# watch_connect PORT PID: make $D/log0.seen once a connection to PORT is up.
watch_connect() {
    local port=$1 pid=$2
    until ss -tnH state established "( dport = :$port )" 2>/dev/null | grep -q .; do
        kill -0 "$pid" 2>/dev/null || return 0
    done
    : >"$D/log0.seen"
}

# watch_log LOG PID ERE: make $D/log0.seen once LOG has a line matching ERE
# (the start phase's trigger).
watch_log() {
    local log=$1 pid=$2 ere=$3
    until grep -Eq "$ere" "$log" 2>/dev/null; do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.005
    done
    : >"$D/log0.seen"
}

trial() {
    local kind=$1 phase=$2 victim=$3 other=$((1 - $3)) name="$1-$2-$3"
    if [[ $phase =~ ^(listen|connect)$ ]] && ! command -v ss >/dev/null; then
        note "skipped $name: no ss (iproute2) to see the handshake's connections"
        return
    fi
    D=$TMP/$name
    mkdir -p "$D"
    # An earlier model in --out (2 epochs): after the trial it is this one or a complete new one.
    "$ROTOR" launch -n 2 -- "$ROTOR" "${job[@]}" --epochs 2 --out "$D/out" >"$D/early.log" 2>&1 ||
        { cat "$D/early.log" >&2; fail "$name: the earlier model"; }
    local ports=("$(free_port)" "$(free_port)")
    printf '127.0.0.1:%s\n127.0.0.1:%s\n' "${ports[@]}" >"$D/hosts"
    local run=("${job[@]}" --hostfile "$D/hosts" --nodes 2 --checkpoint "$D/ck"
               --checkpoint-every 2 --out "$D/out") pids=(0 0) r
    # listen: the victim first, signalled once it listens; then the other.
    for r in $victim $other; do
        "$ROTOR" "${run[@]}" --node $r >"$D/log$r" 2>&1 &
        pids[$r]=$!
        [ "$phase" = listen ] && [ $r = $victim ] && watch_listen "${ports[$r]}" $! &&
            kill -"${kind^^}" $!
    done
    case $phase in
    connect) watch_connect "${ports[$victim]}" "${pids[$victim]}" & ;;
    start) watch_log "$D/log0" "${pids[0]}" 'train: sgd-mf on' & ;;
    esac
    local globs
    read -r -a globs <<<"$(phase_globs "$phase" "$victim")"
    # The ckpt phase is the second checkpoint: the first one (ckpt-2) is complete before.
    if ! until_seen "${pids[$victim]}" "${globs[@]}"; then
        kill -9 "${pids[@]}" 2>/dev/null || true
        wait "${pids[@]}" 2>/dev/null || true
        cat "$D/log0" "$D/log1" >&2
        fail "$name: the job ended before the phase began"
    fi
    [ "$phase" = listen ] || kill -"${kind^^}" "${pids[$victim]}" 2>/dev/null ||
        { cat "$D/log$victim" >&2; fail "$name: rank $victim ended before the signal"; }
    local t0 limit=10 st_other=0 st_victim=0
    t0=$(now)
    [ "$kind" = stop ] && limit=$((PEER_TIMEOUT + 6))
    # Gone before its handshake answered (its kernel reset the connection
    # it had queued): the other cannot tell it from a rank not started yet
    # and waits for it up to the connect timeout (30 s).  Stopped after it
    # answered the other's handshake but before it connected back: waited
    # for as long (no heartbeats before every connection is up).
    [ "$phase" = connect ] && limit=35
    while kill -0 "${pids[$other]}" 2>/dev/null && float_le "$(elapsed "$t0")" $((limit + 5)); do
        sleep 0.05
    done
    local took
    took=$(elapsed "$t0")
    if kill -0 "${pids[$other]}" 2>/dev/null; then
        kill -9 "${pids[@]}" 2>/dev/null
        kill -CONT "${pids[@]}" 2>/dev/null
        cat "$D/log$other" >&2
        fail "$name: rank $other still runs ${took}s after rank $victim got SIG${kind^^}"
    fi
    wait "${pids[$other]}" || st_other=$?
    [ "$kind" != stop ] || kill -9 "${pids[$victim]}" 2>/dev/null || true
    wait "${pids[$victim]}" || st_victim=$?
    wait # the start watcher
    float_le "$took" $limit || fail "$name: rank $other took ${took}s to stop (limit $limit)"
    [ "$st_other" != 0 ] || { cat "$D/log$other" >&2; fail "$name: rank $other exited 0"; }
    grep -Eq "rotor: error: .*rank $victim[ :']" "$D/log$other" ||
        { cat "$D/log$other" >&2; fail "$name: rank $other's error does not name rank $victim"; }
    [ "$kind" != term ] || [ "$st_victim" = 143 ] ||
        { cat "$D/log$victim" >&2; fail "$name: the SIGTERMed rank exited $st_victim, not 143"; }
    # --out: a complete model, the earlier one or this run's.
    expect_status 0 "$ROTOR" eval --model "$D/out" --input "$TMP/t.txt"
    local epochs
    epochs=$(json_int epochs "$D/out/model.json")
    [ "$epochs" = 2 ] || [ "$epochs" = 6 ] || fail "$name: --out holds a model of $epochs epochs"
    # Resume from the newest complete checkpoint (none when stopped at the start).
    local resumed=none
    if compgen -G "$D/ck/ckpt-*/manifest.json" >/dev/null; then
        # The same command again, with --resume: what the killed rank left goes too.
        "$ROTOR" launch -n 2 -- "$ROTOR" "${job[@]}" --resume "$D/ck" --checkpoint "$D/ck" \
            --out "$D/out" >"$D/res.log" 2>&1 || { cat "$D/res.log" >&2; fail "$name: resume"; }
        single "$D/out"
        for f in W.npy H.npy row_bias.npy col_bias.npy; do
            cmp -s "$TMP/ref.single/$f" "$D/out.single/$f" ||
                fail "$name: $f of the resumed run differs from the uninterrupted run"
        done
        resumed=$(grep -o 'continuing at rotation [0-9]*' "$D/res.log" | grep -o '[0-9]*$')
        local left
        left=$(find "$D" -name '*.tmp*')
        [ -z "$left" ] || fail "$name: left after the resume: $left"
    fi
    note "ok $name: rank $other exited $st_other after ${took}s:" \
        "$(grep -m1 'rotor: error' "$D/log$other" | cut -c1-150); --out has $epochs epochs;" \
        "resumed from rotation $resumed"
    rm -rf "$D"
}

for t in "${TRIALS[@]}"; do
    IFS=: read -r kind phase victim <<<"$t"
    trial "$kind" "$phase" "$victim"
done
echo PASS
