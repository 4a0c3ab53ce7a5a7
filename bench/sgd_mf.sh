#!/usr/bin/env bash
# sgd_mf.sh - SGD-MF throughput and convergence benchmark; prints JSON.
#
#   bench/sgd_mf.sh [--rows R] [--cols C] [--nnz N] [--rank K] [--procs P]
#                   [--threads T] [--epochs E] [--true-rank R] [--pipeline C]
#                   [--ml100k] [--insecure]
#
# Generates planted data (or uses ../shared/data/ml-100k u1.base/u1.test with
# --ml100k), partitions it for P processes x T threads, trains with
# `rotor launch`, and prints {"config", "epochs": [...], "summary"} where the
# epochs carry seconds, updates/s, train/test RMSE and stall fraction, and the
# summary the median updates/s and the peak RSS of rank 0.  --insecure trains
# without the job secret (no authenticated handshake), to compare throughput
# with and without it; "secure" in the output says which.
#
# --pipeline defaults to 8 here (the plan default is 2): with 50k columns and
# 2 workers, c = 8 makes each column block's H rows ~400 KiB at k = 32, which
# stays in a 1 MiB L2 (1.6 MiB at c = 2).  Quiet machine: 136M vs 131M
# updates/s; under cache contention from other processes c = 8 held up to ~2x.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
rows=200000 cols=50000 nnz=10000000 rank=32 procs=1 threads=2 epochs=10 true_rank=16
lr=0.005 lambda=0.02 ml100k=0 pipeline=8 insecure=0
BENCH_FLAGS=([ml100k]=ml100k=1 [insecure]=insecure=1)
bench_options 2,21 "$@"
bench_start

[ "$ml100k" = 1 ] && lr=0.01 lambda=0.1 pipeline=2
bench_mf_data "$ml100k" --pipeline "$pipeline"
"$ROTOR" launch -n "$procs" -- "$ROTOR" train --plan "$TMP/plan" --app sgd-mf --rank "$rank" \
    --lr "$lr" --lambda "$lambda" --epochs "$epochs" --seed 1 --metrics "$TMP/metrics.json" \
    $([ "$insecure" = 1 ] && echo --insecure) >&2
# Summary: median updates/s over the epochs (robust to a slow first epoch).
median=$(field updates_per_s "$TMP/metrics.json" | median)
secure=$([ "$insecure" = 1 ] && echo false || echo true)
printf '{"benchmark": "sgd-mf", "procs": %s, "threads": %s, "pipeline": %s, "secure": %s, "summary": {"median_updates_per_s": %s},\n "run": ' \
    "$procs" "$threads" "$pipeline" "$secure" "$median"
cat "$TMP/metrics.json"
printf '}\n'
