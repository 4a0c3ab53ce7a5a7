#!/usr/bin/env bash
# chaos_wire.sh - what reaches a running job from outside its ranks:
#  1. strangers mid-run: once training runs, nothing accepts connections on
#     the ranks' ports (each closed its listener after the handshake), and the
#     job ends with the model of an undisturbed run;
#  2. a second job on the same ports (the same hostfile, its own secret)
#     while the first runs: the first ends with the same model, and the
#     second exits non-zero or trains on its own, never a mix of the two;
#     started while the first is still connecting: their ranks meet, and
#     every rank of both exits 2 within 20 s naming the secret and maybe
#     another job, and neither writes a model;
#  3. a rank that sends garbage after the handshake (tests/verbs/garble.c:
#     every byte it writes to a socket past the first 3 MB): both ranks exit
#     non-zero within 10 s, the other naming it with a protocol error, and
#     no model is written.
source "$(dirname "$0")/lib.sh"
export ROTOR_LOG=info
GARBLE=$ROTOR_BUILD/tests/verbs/libgarble.so

"$ROTOR" gen mf --rows 6000 --cols 1500 --nnz 150000 --rank 8 --noise 0.1 --seed 3 \
    --out "$TMP/r.txt" 2>/dev/null || fail "gen mf"
"$ROTOR" partition --input "$TMP/r.txt" --nodes 2 --threads 1 --seed 3 --out "$TMP/plan" \
    >/dev/null 2>&1 || fail "partition"
job=(train --plan "$TMP/plan" --app sgd-mf --rank 32 --seed 3 --epochs 40)
"$ROTOR" launch -n 2 -- "$ROTOR" "${job[@]}" --out "$TMP/ref" >"$TMP/ref.log" 2>&1 ||
    { cat "$TMP/ref.log" >&2; fail "the undisturbed run failed"; }
single "$TMP/ref"

same_as_ref() { # same_as_ref NAME: $TMP/NAME is the undisturbed model
    single "$TMP/$1"
    for f in W.npy H.npy row_bias.npy col_bias.npy; do
        cmp -s "$TMP/ref.single/$f" "$TMP/$1.single/$f" || fail "$1: $f differs from the undisturbed run"
    done
}

# start_job NAME HOSTS [ENV...]: ranks 0 and 1 of `job` by hand, pids in $p0 $p1, logs $TMP/NAME.logR.
start_job() {
    local name=$1 hosts=$2
    shift 2
    env "$@" "$ROTOR" "${job[@]}" --hostfile "$hosts" --nodes 2 --node 0 --out "$TMP/$name" \
        >"$TMP/$name.log0" 2>&1 &
    p0=$!
    env "$@" "$ROTOR" "${job[@]}" --hostfile "$hosts" --nodes 2 --node 1 --out "$TMP/$name" \
        >"$TMP/$name.log1" 2>&1 &
    p1=$!
}

# until_training NAME: rank 0 of job NAME has logged its first epoch (60 s at most).
until_training() {
    for _ in $(seq 600); do
        grep -q 'epoch ' "$TMP/$1.log0" && return 0
        kill -0 "$p0" 2>/dev/null || break
        sleep 0.1
    done
    cat "$TMP/$1.log0" "$TMP/$1.log1" >&2
    fail "$1: training never started"
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

note "1. strangers mid-run"
q0=$(free_port) q1=$(free_port)
printf '127.0.0.1:%s\n127.0.0.1:%s\n' "$q0" "$q1" >"$TMP/hosts"
start_job mid "$TMP/hosts"
until_training mid
for q in $q0 $q1; do
    ! port_open "$q" || fail "a stranger could connect to port $q mid-run"
done
st0=0 st1=0
wait "$p0" || st0=$?
wait "$p1" || st1=$?
[ "$st0$st1" = 00 ] || { cat "$TMP/mid.log0" "$TMP/mid.log1" >&2; fail "mid: exits $st0 $st1"; }
same_as_ref mid

note "2. a second job on the same ports while the first runs"
start_job first "$TMP/hosts"
a0=$p0 a1=$p1
until_training first
start_job second "$TMP/hosts" ROTOR_TOKEN=another-job
b0=$p0 b1=$p1
s=()
for p in $a0 $a1 $b0 $b1; do
    st=0
    timeout 120 tail --pid="$p" -f /dev/null || fail "a rank of the two jobs still runs after 120 s"
    wait "$p" || st=$?
    s+=("$st")
done
note "exits: first job ${s[0]} ${s[1]}, second job ${s[2]} ${s[3]}"
[ "${s[0]}${s[1]}" = 00 ] || { cat "$TMP/first.log0" "$TMP/first.log1" >&2; fail "the first job failed"; }
same_as_ref first
if [ "${s[2]}${s[3]}" = 00 ]; then
    same_as_ref second
else
    [ "${s[2]}" != 0 ] && [ "${s[3]}" != 0 ] ||
        { cat "$TMP/second.log0" "$TMP/second.log1" >&2; fail "one rank of the second job exited 0"; }
    [ ! -e "$TMP/second" ] || fail "the failed second job left --out"
    note "second job: $(grep -m1 'rotor: error' "$TMP/second.log0")"
fi

note "2b. a second job on the same ports while the first connects"
printf '127.0.0.1:%s\n127.0.0.1:%s\n' "$(free_port)" "$(free_port)" >"$TMP/hosts2"
t0=$SECONDS
ROTOR_TOKEN=job-one "$ROTOR" "${job[@]}" --hostfile "$TMP/hosts2" --nodes 2 --node 0 \
    --out "$TMP/one" >"$TMP/one.log0" 2>&1 &
j=($!)
sleep 0.3 # rank 0 of the first job listens; its rank 1 comes late
start_job two "$TMP/hosts2" ROTOR_TOKEN=job-two
j+=("$p0" "$p1")
sleep 2
ROTOR_TOKEN=job-one "$ROTOR" "${job[@]}" --hostfile "$TMP/hosts2" --nodes 2 --node 1 \
    --out "$TMP/one" >"$TMP/one.log1" 2>&1 &
j+=($!)
logs=("$TMP/one.log0" "$TMP/two.log0" "$TMP/two.log1" "$TMP/one.log1")
for i in 0 1 2 3; do
    timeout 60 tail --pid="${j[$i]}" -f /dev/null || true
    kill -9 "${j[$i]}" 2>/dev/null || true
    st=0
    wait "${j[$i]}" || st=$?
    [ "$st" = 2 ] || { cat "${logs[$i]}" >&2; fail "2b: ${logs[$i]##*/}: exit $st, want 2"; }
    grep -q "rotor: error: .*authentication failed: .*another job's rank on that port" \
        "${logs[$i]}" || { cat "${logs[$i]}" >&2; fail "2b: ${logs[$i]##*/} does not say why"; }
done
[ $((SECONDS - t0)) -le 20 ] || fail "2b: the four ranks took $((SECONDS - t0)) s"
[ ! -e "$TMP/one" ] && [ ! -e "$TMP/two" ] || fail "2b: a model was written"
note "2b: $(grep -h -m1 'rotor: error' "$TMP/one.log0")"

note "3. a rank that sends garbage after the handshake"
[ -f "$GARBLE" ] || skip "tests/verbs/libgarble.so not built"
for victim in 1 0; do
    printf '127.0.0.1:%s\n127.0.0.1:%s\n' "$(free_port)" "$(free_port)" >"$TMP/ghosts"
    other=$((1 - victim))
    gp=()
    for r in 0 1; do
        e=()
        # (a sanitizer build's runtime need not come first for this test)
        [ $r = $victim ] && e=(LD_PRELOAD="$GARBLE" ROTOR_GARBLE_AFTER=3000000
                               ASAN_OPTIONS=verify_asan_link_order=0)
        env "${e[@]}" "$ROTOR" "${job[@]}" --hostfile "$TMP/ghosts" --nodes 2 --node $r \
            --out "$TMP/garbled" >"$TMP/g.log$r" 2>&1 &
        gp+=($!)
    done
    t0=$SECONDS
    st=()
    for r in 0 1; do
        timeout 60 tail --pid="${gp[$r]}" -f /dev/null || true
        kill -9 "${gp[$r]}" 2>/dev/null || true
        rc=0
        wait "${gp[$r]}" || rc=$?
        st+=("$rc")
    done
    note "garbling rank $victim: exits ${st[0]} ${st[1]} after $((SECONDS - t0)) s;" \
        "rank $other: $(grep -m1 'rotor: error' "$TMP/g.log$other")"
    [ $((SECONDS - t0)) -le 20 ] || fail "garbling rank $victim: the ranks took $((SECONDS - t0)) s"
    grep -q 'epoch ' "$TMP/g.log0" || note "(the garbage began before the first epoch ended)"
    for r in 0 1; do
        [ "${st[$r]}" != 0 ] && [ "${st[$r]}" != 137 ] ||
            { cat "$TMP/g.log$r" >&2; fail "garbling rank $victim: rank $r exited ${st[$r]}"; }
    done
    grep -Eq "rotor: error: .*rank $victim .*protocol error" "$TMP/g.log$other" ||
        { cat "$TMP/g.log$other" >&2; fail "rank $other does not name rank $victim's protocol error"; }
    [ ! -e "$TMP/garbled" ] || fail "a model was written from a garbled job"
done
echo PASS
