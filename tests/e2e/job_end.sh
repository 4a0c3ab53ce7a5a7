#!/usr/bin/env bash
# The job-end agreement: a rank that fails after the last collective of the
# run (its last metrics write, here past a 1 KiB file size limit, with no
# --out so that nothing follows it) makes every other rank exit non-zero
# with that rank's own message, where they used to exit 0; a rank killed
# there is named by the others, within the liveness limits (no hang).
source "$(dirname "$0")/lib.sh"
export ROTOR_LOG=warn # the limited rank's stderr file is under its 1 KiB limit too

"$ROTOR" gen mf --rows 400 --cols 240 --nnz 8000 --rank 4 --seed 5 --out "$TMP/r.txt" 2>/dev/null
for p in 2 3; do
    "$ROTOR" partition --input "$TMP/r.txt" --nodes $p --threads 1 --out "$TMP/plan$p" >/dev/null 2>&1
done

# ranks NAME P HOW ARGS...: P ranks run train ARGS; rank 0 (the one that
# writes --metrics) under `ulimit -f 1`: HOW=error ignores SIGXFSZ, so the
# write fails with EFBIG; HOW=kill leaves it, so the write kills rank 0.
# Exit codes go to $TMP/NAME.rcR, stderr to $TMP/NAME.errR.
ranks() {
    local name=$1 p=$2 how=$3 r pids=()
    shift 3
    : >"$TMP/$name.hosts"
    for ((r = 0; r < p; r++)); do echo "127.0.0.1:$(free_port)" >>"$TMP/$name.hosts"; done
    for ((r = 0; r < p; r++)); do
        (
            if [ $r = 0 ]; then
                ulimit -f 1 -c 0
                [ "$how" = error ] && trap '' XFSZ
            fi
            rc=0
            timeout 60 "$ROTOR" train --plan "$TMP/plan$p" --app sgd-mf --rank 4 \
                --hostfile "$TMP/$name.hosts" --nodes "$p" --node "$r" "$@" \
                2>"$TMP/$name.err$r" || rc=$?
            echo "$rc" >"$TMP/$name.rc$r"
        ) &
        pids+=($!)
    done
    wait "${pids[@]}"
}

for p in 2 3; do
    note "$p ranks: rank 0's last metrics write fails (no --out)"
    ranks "efbig$p" $p error --epochs 8 --metrics "$TMP/m$p.json"
    expect_rank_error "efbig$p" 0 "m$p.json: write failed: File too large"
    for ((r = 1; r < p; r++)); do
        expect_rank_error "efbig$p" $r "rank 0 stopped: .*m$p.json: write failed: File too large"
    done
    [ ! -e "$TMP/m$p.json" ] || fail "$p ranks: a metrics file past the limit was left"

    note "$p ranks: rank 0 is killed by its last metrics write (SIGXFSZ)"
    ranks "killed$p" $p kill --epochs 8 --metrics "$TMP/k$p.json"
    rc=$(cat "$TMP/killed$p.rc0")
    [ "$rc" = $((128 + $(kill -l XFSZ))) ] || fail "$p ranks: rank 0 exited $rc, not by SIGXFSZ"
    for ((r = 1; r < p; r++)); do
        expect_rank_error "killed$p" $r "lost rank 0 "
    done
done
echo "PASS: job_end"
