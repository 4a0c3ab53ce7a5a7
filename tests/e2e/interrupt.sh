#!/bin/bash
# Interrupted commands leave nothing: SIGTERM while `rotor partition` writes
# its plan, while `rotor train` rewrites its metrics file (with a new --out),
# while it writes a checkpoint (the root and the finished
# checkpoints stay; a SIGKILLed run's temporary goes with the next run),
# while `rotor launch` runs two ranks (SIGTERM, SIGHUP), while `rotor gen mf` writes its output, while `rotor
# export` fills its temporary directory, while `rotor recommend` writes its
# list and while `rotor infer` samples.  Each dies by the signal, and no
# temporary file or directory, and no partial output, is left behind.
source "$(dirname "$0")/lib.sh"
cd "$TMP"
export ROTOR_LOG=warn

# wait_for GLOB PID: poll (up to 60 s) until GLOB matches; 1 if PID ended first.
wait_for() {
    local glob=$1 pid=$2 end=$((SECONDS + 60))
    while [ $SECONDS -lt $end ]; do
        compgen -G "$glob" >/dev/null && return 0
        kill -0 "$pid" 2>/dev/null || return 1
    done
    return 1
}

# term_when GLOB ERR CMD...: run CMD (stderr to ERR) and SIGTERM it once GLOB
# matches; its exit status in $rc; 1 when CMD ended before GLOB appeared.
term_when() {
    local glob=$1 log=$2 caught=1
    shift 2
    "$@" 2>"$log" &
    local pid=$!
    wait_for "$glob" $pid && kill -TERM $pid && caught=0
    rc=0
    wait $pid || rc=$?
    return $caught
}

# expect_clean WHAT DIR ERR: the command died by SIGTERM and DIR is empty.
expect_clean() {
    [ $rc = 143 ] || { cat "$3" >&2; fail "$1: exit $rc, want 143 (SIGTERM)"; }
    [ -z "$(ls -A "$2")" ] || fail "$1 left: $(ls -A "$2")"
    note "ok: $(cat "$3")"
}

leftovers() { find "$TMP/$1" -maxdepth 2 \( -name '*.tmp*' -o -name "$2" \) 2>/dev/null; }

"$ROTOR" gen mf --rows 20000 --cols 4000 --nnz 1500000 --rank 4 --seed 5 --out r.txt

note "partition: SIGTERM while the plan's temporary directory is being written"
caught=0
for attempt in 1 2 3; do
    rm -rf out && mkdir out
    term_when 'out/plan.tmp-*' part.err "$ROTOR" partition --input r.txt --nodes 2 --threads 2 \
        --out out/plan && caught=1 && break
    note "partition finished before the temporary appeared (attempt $attempt)"
done
[ $caught = 1 ] || fail "never caught partition mid-write"
grep -q 'interrupted' part.err || fail "partition: no 'interrupted' message"
expect_clean partition out part.err

note "train: SIGTERM while the metrics file is rewritten (with a new --out)"
"$ROTOR" partition --input r.txt --nodes 1 --threads 1 --out plan 2>/dev/null
mkdir tr
"$ROTOR" train --plan plan --app sgd-mf --rank 4 --epochs 100000 --serial \
    --out tr/model --metrics tr/metrics.json 2>train.err &
pid=$!
# (a new --out is made only when the model is saved: it was made at the start
# and left empty by a SIGKILLed run)
wait_for 'tr/metrics.json*' $pid || fail "train never wrote its metrics"
mid=0
if wait_for 'tr/metrics.json.tmp.*' $pid; then mid=1; fi
kill -TERM $pid
rc=0
wait $pid || rc=$?
note "metrics temporary caught: $mid"
expect_clean train tr train.err

note "train: SIGTERM while a checkpoint's state file is written"
# The checkpoint root is kept (a resume needs it); only temporaries go, also
# inside ckpt-N.  They were left there, and survived into later checkpoints.
ck_caught=0
for attempt in 1 2 3; do
    rm -rf ck ckm
    "$ROTOR" train --plan plan --app sgd-mf --rank 256 --epochs 100000 --serial --out ckm \
        --checkpoint ck --checkpoint-every 1 2>ck.err &
    pid=$!
    wait_for 'ck/ckpt-*/*.tmp*' $pid && ck_caught=1
    kill -TERM $pid
    rc=0
    wait $pid || rc=$?
    [ $ck_caught = 1 ] && break
    note "no checkpoint temporary caught (attempt $attempt)"
done
[ $ck_caught = 1 ] || fail "never caught a checkpoint mid-write"
[ $rc = 143 ] || { cat ck.err >&2; fail "train with --checkpoint: exit $rc, want 143"; }
[ -d ck ] || fail "SIGTERM removed the checkpoint root"
[ -z "$(find ck -name '*.tmp*')" ] || fail "SIGTERM left in the checkpoints: $(find ck -name '*.tmp*')"
[ ! -e ckm ] || fail "SIGTERM left --out ckm"

note "train: a run SIGKILLed mid-checkpoint; the next run removes its temporary"
rm -rf ck ckm
"$ROTOR" train --plan plan --app sgd-mf --rank 256 --epochs 100000 --serial --out ckm \
    --checkpoint ck --checkpoint-every 1 2>ck.err &
pid=$!
wait_for 'ck/ckpt-*/*.tmp*' $pid || fail "never caught a checkpoint mid-write (SIGKILL)"
kill -KILL $pid
wait $pid 2>/dev/null || true
stale=$(find ck -name '*.tmp*')
[ -n "$stale" ] || fail "the SIGKILLed run left no temporary to test with"
rm -rf ckm
"$ROTOR" train --plan plan --app sgd-mf --rank 2 --epochs 1 --serial --out ckm --checkpoint ck \
    --checkpoint-every 9 2>ck.err || { cat ck.err >&2; fail "train after the SIGKILL"; }
[ -z "$(find ck -name '*.tmp*')" ] || fail "the next run left the dead run's $stale"

# rotor launch forwards SIGTERM and SIGHUP (a closed terminal) to its ranks,
# which remove their partial outputs, and then ends by the same signal.  It
# exited 1 ("rank 0 killed by signal 15"); on SIGHUP it died at once and its
# ranks were SIGKILLed, leaving --out behind.
"$ROTOR" partition --input r.txt --nodes 2 --threads 1 --out plan2 2>/dev/null
for sig in TERM HUP; do
    note "launch: SIG$sig while two ranks train"
    rm -rf ln && mkdir ln
    "$ROTOR" launch -n 2 -- "$ROTOR" train --plan plan2 --app sgd-mf --rank 4 --epochs 100000 \
        --out ln/model --metrics ln/metrics.json 2>ln.err &
    pid=$!
    wait_for 'ln/metrics.json*' $pid || { cat ln.err >&2; fail "launch: no metrics appeared"; }
    sleep 0.5 # both ranks under way (a rank signalled before it starts has nothing to remove)
    kill -$sig $pid
    rc=0
    wait $pid || rc=$?
    want=$((128 + $(kill -l $sig)))
    [ $rc = $want ] || { cat ln.err >&2; fail "launch on SIG$sig: exit $rc, want $want"; }
    for _ in $(seq 50); do [ -z "$(ls -A ln)" ] && break; sleep 0.1; done
    [ -z "$(ls -A ln)" ] || fail "launch on SIG$sig left: $(ls -A ln)"
done

note "gen mf: SIGTERM while the output is written"
mkdir gen
term_when 'gen/big.txt.tmp.*' gen.err "$ROTOR" gen mf --rows 20000 --cols 4000 --nnz 2000000 \
    --seed 1 --out gen/big.txt || fail "gen never started writing"
expect_clean gen gen gen.err

note "export: SIGTERM while its temporary directory is filled"
"$ROTOR" train --plan plan --app sgd-mf --rank 32 --epochs 1 --serial --out model 2>/dev/null
for attempt in 1 2 3; do
    rm -rf ex && mkdir ex
    term_when 'ex/single.tmp-*' ex.err "$ROTOR" export --model model --out ex/single && break
    note "export finished before its temporary appeared (attempt $attempt)"
done
expect_clean export ex ex.err

note "recommend: SIGTERM while the list is written"
mkdir rec
term_when 'rec/top.txt.tmp.*' rec.err "$ROTOR" recommend --model model --top 10 --no-exclude \
    --out rec/top.txt || fail "recommend finished before its temporary appeared"
expect_clean recommend rec rec.err

note "infer: SIGTERM while sampling"
"$ROTOR" gen lda --docs 3000 --vocab 2000 --topics 10 --doc-len 100 --seed 2 --out d.txt \
    2>/dev/null
"$ROTOR" partition --app lda --input d.txt --vocab d.txt.vocab.txt --nodes 1 --threads 1 \
    --out ldaplan 2>/dev/null
"$ROTOR" train --plan ldaplan --app lda --topics 10 --iters 1 --serial --out ldamodel 2>/dev/null
mkdir inf
"$ROTOR" infer --model ldamodel --input d.txt --vocab d.txt.vocab.txt --iters 100000 --out inf/out 2>inf.err &
pid=$!
sleep 1
kill -TERM $pid
rc=0
wait $pid || rc=$?
expect_clean infer inf inf.err

note "a failed train (bad option after the --out directory was made) leaves no --out"
expect_status 2 "$ROTOR" train --plan plan --app sgd-mf --rank 4 --epochs 1 --serial \
    --out tr/model2 --lr -5
[ ! -e tr/model2 ] || fail "failed train left tr/model2"
echo PASS
