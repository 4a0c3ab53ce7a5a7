#!/usr/bin/env bash
# checkpoint.sh - what checkpoints cost: each app trained with and without
# --checkpoint at several intervals; prints JSON.
#
#   bench/checkpoint.sh [--rounds R] [--every N[,N...]] [--apps sgd-mf,cd-mf,lda]
#                       [--procs P] [--threads T] [--rows R] [--cols C] [--nnz N]
#                       [--true-rank K] [--docs D] [--vocab V] [--doc-len L]
#
# Data: planted MF ratings (rotor gen mf, R x C with N ratings) for sgd-mf and
# cd-mf, an LDA corpus (rotor gen lda) for lda; each partitioned for P
# processes x T threads and trained with `rotor launch` and the apps' default
# options.  Every round runs, per app, one plain run and one run per interval
# (the order rotated from round to round, so that load drifts hit all alike).
# Per (app, interval):
#   wall_s         median wall time of the whole job (rotor launch ... train);
#   checkpoint_s   median total of the "checkpoint: ... in Xs" times rank 0
#                  logs (writing every rank's state, the barrier, the manifest);
#   checkpoints    how many were written (every N epochs and at the end);
#   cost_pct       checkpoint_s / the plain run's median wall_s, in percent;
#   wall_cost_pct  (wall_s - plain wall_s) / plain wall_s, in percent (noisier).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
rounds=3 every=5,10,20 apps=sgd-mf,cd-mf,lda procs=2 threads=1
rows=50000 cols=10000 nnz=1000000 true_rank=8 docs=5000 vocab=10000 doc_len=200
bench_options 2,20 "$@"
bench_start
export ROTOR_TOKEN=${ROTOR_TOKEN:-bench-checkpoint-secret}

bench_mf_data 0
"$ROTOR" gen lda --docs "$docs" --vocab "$vocab" --topics 50 --alpha 0.1 --beta 0.01 \
    --doc-len "$doc_len" --seed 1 --out "$TMP/corpus.txt" >&2
"$ROTOR" partition --app lda --input "$TMP/corpus.txt" --nodes "$procs" --threads "$threads" \
    --test-fraction 0.05 --seed 1 --out "$TMP/plan-lda" --quiet >&2
rm -f "$TMP/train.txt" "$TMP/test.txt" "$TMP/corpus.txt"

# run APP EVERY: one job (EVERY 0 = no checkpoints); appends
# "app every wall_s checkpoint_s checkpoints" to $TMP/runs.
run() {
    local app=$1 n=$2 plan=$TMP/plan log=$TMP/log ck=()
    [ "$app" = lda ] && plan=$TMP/plan-lda
    [ "$n" = 0 ] || ck=(--checkpoint "$TMP/ck" --checkpoint-every "$n")
    rm -rf "$TMP/ck"
    local t0 t1
    t0=$(date +%s.%N)
    "$ROTOR" launch -n "$procs" -- "$ROTOR" train --plan "$plan" --app "$app" --seed 1 \
        "${ck[@]}" >"$log" 2>&1 || { cat "$log" >&2; exit 1; }
    t1=$(date +%s.%N)
    local sum count
    sum=$({ grep -o 'checkpoint: rotation .* in [0-9.]*s' "$log" || true; } |
        sed 's/.* in \([0-9.]*\)s/\1/' | awk '{s += $1} END {printf "%.4f", s}')
    count=$(grep -c 'checkpoint: rotation' "$log" || true)
    echo "$app $n $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.4f", b - a}') $sum $count" \
        >>"$TMP/runs"
}

read -r -a intervals <<<"0 ${every//,/ }"
for ((r = 0; r < rounds; r++)); do
    for app in ${apps//,/ }; do
        for ((i = 0; i < ${#intervals[@]}; i++)); do
            run "$app" "${intervals[$(((i + r) % ${#intervals[@]}))]}"
        done
    done
done

printf '{"benchmark": "checkpoint", "config": {"rounds": %s, "procs": %s, "threads": %s, "mf": {"rows": %s, "cols": %s, "nnz": %s}, "lda": {"docs": %s, "vocab": %s, "doc_len": %s}, "loadavg": "%s"},\n "runs": [' \
    "$rounds" "$procs" "$threads" "$rows" "$cols" "$nnz" "$docs" "$vocab" "$doc_len" \
    "$(cut -d' ' -f1-3 /proc/loadavg)"
sep=""
for app in ${apps//,/ }; do
    plain=$(awk -v a="$app" '$1 == a && $2 == 0 {print $3}' "$TMP/runs" | median 0)
    for n in "${intervals[@]:1}"; do
        sel() { awk -v a="$app" -v n="$n" -v f="$1" '$1 == a && $2 == n {print $f}' "$TMP/runs" | median 0; }
        wall=$(sel 3) ck=$(sel 4) count=$(sel 5)
        printf '%s\n  {"app": "%s", "every": %s, "plain_wall_s": %s, "wall_s": %s, "checkpoint_s": %s, "checkpoints": %s, "cost_pct": %s, "wall_cost_pct": %s}' \
            "$sep" "$app" "$n" "$plain" "$wall" "$ck" "$count" \
            "$(awk -v c="$ck" -v p="$plain" 'BEGIN {printf "%.2f", 100 * c / p}')" \
            "$(awk -v w="$wall" -v p="$plain" 'BEGIN {printf "%.2f", 100 * (w - p) / p}')"
        sep=","
    done
done
printf '\n]}\n'
