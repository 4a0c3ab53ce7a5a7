#!/bin/bash
# The short-lived readers of a plan (partition --verify, simulate --plan,
# recommend's exclusion of the training items) while another process cuts a
# shard short and writes it back, over and over: every run either succeeds
# or stops with exit 2 and one line naming the shard; none is killed by a
# signal.  (They mapped the shards: a cut under the mapping was SIGBUS, in
# about one verify of five here.  They now read them into memory.)
source "$(dirname "$0")/lib.sh"
cd "$TMP"
export ROTOR_LOG=warn

"$ROTOR" gen mf --rows 20000 --cols 5000 --nnz 1000000 --rank 4 --seed 9 --out r.txt 2>/dev/null
"$ROTOR" partition --input r.txt --nodes 1 --threads 1 --out plan 2>/dev/null
"$ROTOR" train --plan plan --app sgd-mf --rank 4 --epochs 1 --out model 2>/dev/null
cp plan/shard-00000.bin saved.bin
awk 'NR <= 5 { print $1 }' r.txt >users.txt

# cut_and_restore SECONDS: the shard cut to one page and written back, in a loop.
cut_and_restore() {
    local end=$((SECONDS + $1))
    while [ $SECONDS -lt $end ]; do
        truncate -s 4096 plan/shard-00000.bin
        cat saved.bin >plan/shard-00000.bin
    done
}

readers=("partition --verify plan"
    "simulate --plan plan --app sgd-mf --rank 4 --rate 1e7"
    "recommend --model model --top 3 --users users.txt")
cut_and_restore 30 &
cutter=$!
runs=0 failed=0
for ((i = 0; i < 60; i++)); do
    kill -0 $cutter 2>/dev/null || break
    cmd=${readers[$((i % 3))]}
    rc=0
    # shellcheck disable=SC2086 # the command's words
    "$ROTOR" $cmd >/dev/null 2>err || rc=$?
    runs=$((runs + 1))
    [ "$rc" -lt 128 ] || fail "rotor $cmd was killed by signal $((rc - 128))"
    [ "$rc" = 0 ] && continue
    failed=$((failed + 1))
    [ "$rc" = 2 ] || { cat err >&2; fail "rotor $cmd exited $rc"; }
    [ "$(wc -l <err)" = 1 ] && grep -q '^rotor: error: .*shard-00000.bin: ' err ||
        { cat err >&2; fail "rotor $cmd: not one line naming the shard"; }
done
kill $cutter 2>/dev/null || true
wait $cutter 2>/dev/null || true
note "$runs runs under a cutting shard: $failed stopped with exit 2 naming it, none by a signal"
[ "$runs" -ge 30 ] || fail "only $runs runs"
echo PASS
