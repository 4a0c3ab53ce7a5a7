#!/usr/bin/env bash
# sgd_mf.sh - SGD-MF throughput and convergence benchmark; prints JSON.
#
#   bench/sgd_mf.sh [--rows R] [--cols C] [--nnz N] [--rank K] [--procs P]
#                   [--threads T] [--epochs E] [--true-rank R] [--pipeline C]
#                   [--ml100k]
#
# Generates planted data (or uses ../shared/data/ml-100k u1.base/u1.test with
# --ml100k), partitions it for P processes x T threads, trains with
# `rotor launch`, and prints {"config", "epochs": [...], "summary"} where the
# epochs carry seconds, updates/s, train/test RMSE and stall fraction, and the
# summary the median updates/s and the peak RSS of rank 0.
#
# --pipeline defaults to 8 here (the plan default is 2): with 50k columns and
# 2 workers, c = 8 makes each column block's H rows ~400 KiB at k = 32, which
# stays in a 1 MiB L2 (1.6 MiB at c = 2).  Quiet machine: 136M vs 131M
# updates/s; under cache contention from other processes c = 8 held up to ~2x.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROTOR=${ROTOR:-$ROOT/build/tools/rotor}
rows=200000 cols=50000 nnz=10000000 rank=32 procs=1 threads=2 epochs=10 true_rank=16
lr=0.005 lambda=0.02 ml100k=0 pipeline=8
while [ $# -gt 0 ]; do
    case $1 in
    --rows) rows=$2; shift ;;
    --cols) cols=$2; shift ;;
    --nnz) nnz=$2; shift ;;
    --rank) rank=$2; shift ;;
    --procs) procs=$2; shift ;;
    --threads) threads=$2; shift ;;
    --epochs) epochs=$2; shift ;;
    --true-rank) true_rank=$2; shift ;;
    --lr) lr=$2; shift ;;
    --lambda) lambda=$2; shift ;;
    --pipeline) pipeline=$2; shift ;;
    --ml100k) ml100k=1 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "sgd_mf.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
[ -x "$ROTOR" ] || { echo "build first: tools/run.sh build" >&2; exit 2; }
TMP=$(mktemp -d) && trap 'rm -rf "$TMP"' EXIT

if [ "$ml100k" = 1 ]; then
    data=${ROTOR_DATA_DIR:-$ROOT/../shared/data}/ml-100k
    xz -dc "$data/u1.base.xz" >"$TMP/train.txt"
    xz -dc "$data/u1.test.xz" >"$TMP/test.txt"
    lr=0.01 lambda=0.1 pipeline=2
else
    "$ROTOR" gen mf --rows "$rows" --cols "$cols" --nnz "$nnz" --rank "$true_rank" --noise 0.1 \
        --seed 1 --out "$TMP/train.txt" --test-out "$TMP/test.txt" --test-fraction 0.05 2>/dev/null
fi
"$ROTOR" partition --input "$TMP/train.txt" --test "$TMP/test.txt" --nodes "$procs" \
    --threads "$threads" --pipeline "$pipeline" --seed 1 --out "$TMP/plan" 2>/dev/null
"$ROTOR" launch -n "$procs" -- "$ROTOR" train --plan "$TMP/plan" --app sgd-mf --rank "$rank" \
    --lr "$lr" --lambda "$lambda" --epochs "$epochs" --seed 1 --metrics "$TMP/metrics.json" \
    >&2
# Summary: median updates/s over the epochs (robust to a slow first epoch).
median=$(grep -o '"updates_per_s": [0-9.e+]*' "$TMP/metrics.json" | awk '{print $2}' | sort -g |
         awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}')
printf '{"benchmark": "sgd-mf", "procs": %s, "threads": %s, "pipeline": %s, "summary": {"median_updates_per_s": %s},\n "run": ' \
    "$procs" "$threads" "$pipeline" "$median"
cat "$TMP/metrics.json"
printf '}\n'
