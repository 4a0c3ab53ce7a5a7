#!/bin/bash
# A shard truncated under a running 2-rank job: the rank reading it stops
# with a message naming the file (exit 2), the job fails, and no process is
# killed by a signal (no SIGBUS).
source "$(dirname "$0")/lib.sh"
cd "$TMP"
export ROTOR_LOG=info

"$ROTOR" gen mf --rows 3000 --cols 800 --nnz 200000 --rank 4 --seed 9 --out r.txt 2>/dev/null
"$ROTOR" partition --input r.txt --nodes 2 --threads 1 --test-fraction 0.1 --out plan 2>/dev/null
"$ROTOR" launch -n 2 -- "$ROTOR" train --plan plan --app sgd-mf --rank 8 --epochs 100000 \
    >job.out 2>&1 &
pid=$!
for ((i = 0; i < 6000; i++)); do
    grep -q 'epoch *3 ' job.out && break
    kill -0 $pid 2>/dev/null || { cat job.out >&2; fail "job ended before epoch 3"; }
    sleep 0.01
done
grep -q 'epoch *3 ' job.out || fail "job never reached epoch 3"
truncate -s 4096 plan/shard-00001.bin
rc=0
wait $pid || rc=$?
cat job.out | tail -5 >&2
[ $rc != 0 ] || fail "the job succeeded on a truncated shard"
grep -q 'shard-00001.bin: changed while the job was reading it' job.out ||
    fail "no message naming the truncated shard"
! grep -qi 'signal\|bus error' job.out || fail "a rank died by a signal"
echo PASS
