#!/usr/bin/env bash
# A rank that stops on an error of its own (here a file it cannot write) tells
# the other ranks why: they fail naming that rank and its cause, not
# "lost rank R ...: Broken pipe" (rt_engine_abort).  Exit codes stay non-zero.
source "$(dirname "$0")/lib.sh"
export ROTOR_LOG=warn # the limited rank's stderr file is under its 1 KiB limit too

"$ROTOR" gen mf --rows 400 --cols 200 --nnz 8000 --rank 4 --seed 5 --out "$TMP/r.txt" 2>/dev/null
"$ROTOR" partition --input "$TMP/r.txt" --nodes 2 --threads 1 --out "$TMP/plan" >/dev/null 2>&1
printf '127.0.0.1:%s\n127.0.0.1:%s\n' "$(free_port)" "$(free_port)" >"$TMP/hosts"

# two_ranks NAME LIMITED_RANK ARGS...: both ranks run train ARGS; the limited
# one under `ulimit -f 1` (a write beyond 1 KiB fails with EFBIG).  Their
# exit codes go to $TMP/NAME.rc0/1, their stderr to $TMP/NAME.err0/1.
two_ranks() {
    local name=$1 limited=$2; shift 2
    local r pids=()
    for r in 0 1; do
        (
            [ "$r" = "$limited" ] && { ulimit -f 1; trap '' XFSZ; }
            rc=0
            timeout 60 "$ROTOR" train --plan "$TMP/plan" --app sgd-mf --rank 4 --hostfile "$TMP/hosts" \
                --nodes 2 --node "$r" "$@" 2>"$TMP/$name.err$r" || rc=$?
            echo "$rc" >"$TMP/$name.rc$r"
        ) &
        pids+=($!)
    done
    wait "${pids[@]}"
}

note "metrics write fails on rank 0 in the last epoch"
two_ranks metrics 0 --epochs 6 --metrics "$TMP/m.json" --out "$TMP/m0"
expect_rank_error metrics 0 "m.json: write failed: File too large"
expect_rank_error metrics 1 "rank 0 stopped: .*m.json: write failed: File too large"
[ ! -e "$TMP/m0" ] || fail "a model was saved"

note "checkpoint write fails on rank 1"
two_ranks ckpt 1 --epochs 3 --checkpoint "$TMP/ck" --checkpoint-every 1
expect_rank_error ckpt 1 "File too large"
expect_rank_error ckpt 0 "checkpoint at rotation 1: rank 1 could not write its state"
[ -z "$(ls -A "$TMP/ck")" ] || fail "the failed checkpoint left $(ls -A "$TMP/ck")"
echo "PASS: rank_error_cause"
