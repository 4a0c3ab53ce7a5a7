#!/usr/bin/env bash
# lda.sh - LDA throughput and convergence benchmark; prints JSON.
#
#   bench/lda.sh [--docs D] [--vocab V] [--true-topics K0] [--doc-len L]
#                [--topics K[,K...]] [--samplers sparse,mh] [--mh-steps M]
#                [--procs P] [--threads T] [--iters N] [--eval-every E]
#                [--no-kos] [--no-gen]
#
# Generates an LDA corpus (rotor gen lda: D docs of Poisson(L) tokens over V
# words from K0 planted topics) and, when ../shared/data/uci-kos is present,
# uses UCI KOS as well; partitions each for P processes x T threads, trains
# every (corpus, K, sampler) with `rotor launch` and prints
#   {"benchmark": "lda", "config": {...}, "runs": [{"corpus", "topics",
#    "sampler", "summary": {"median_tokens_per_s", "final_ll_per_token",
#    "final_perplexity"}, "metrics": <the run's --metrics document>}, ...]}
# "metrics" holds one record per evaluation: ll_per_token (Griffiths &
# Steyvers log p(w,z) / tokens), perplexity (document completion on the
# held-out documents) and tokens_per_s (mean over the sweeps since the
# previous evaluation).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROTOR=${ROTOR:-$ROOT/build/tools/rotor}
docs=20000 vocab=20000 true_topics=100 doc_len=200 topics=100,1000 samplers=sparse,mh
mh_steps=2 procs=1 threads=2 iters=30 eval_every=10 kos=1 gen=1
while [ $# -gt 0 ]; do
    case $1 in
    --docs) docs=$2; shift ;;
    --vocab) vocab=$2; shift ;;
    --true-topics) true_topics=$2; shift ;;
    --doc-len) doc_len=$2; shift ;;
    --topics) topics=$2; shift ;;
    --samplers) samplers=$2; shift ;;
    --mh-steps) mh_steps=$2; shift ;;
    --procs) procs=$2; shift ;;
    --threads) threads=$2; shift ;;
    --iters) iters=$2; shift ;;
    --eval-every) eval_every=$2; shift ;;
    --no-kos) kos=0 ;;
    --no-gen) gen=0 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "lda.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
[ -x "$ROTOR" ] || { echo "build first: tools/run.sh build" >&2; exit 2; }
TMP=$(mktemp -d) && trap 'rm -rf "$TMP"' EXIT

corpora=()
if [ "$gen" = 1 ]; then
    "$ROTOR" gen lda --docs "$docs" --vocab "$vocab" --topics "$true_topics" --alpha 0.1 \
        --beta 0.01 --doc-len "$doc_len" --seed 1 --out "$TMP/gen.txt" >&2
    "$ROTOR" partition --app lda --input "$TMP/gen.txt" --nodes "$procs" --threads "$threads" \
        --test-fraction 0.05 --seed 1 --out "$TMP/plan-generated" >&2
    corpora+=(generated)
fi
data=${ROTOR_DATA_DIR:-$ROOT/../shared/data}/uci-kos
if [ "$kos" = 1 ] && [ -f "$data/docword.kos.txt.xz" ]; then
    xz -dc "$data/docword.kos.txt.xz" >"$TMP/docword.kos.txt"
    xz -dc "$data/vocab.kos.txt.xz" >"$TMP/vocab.kos.txt"
    "$ROTOR" partition --app lda --input "$TMP/docword.kos.txt" --vocab "$TMP/vocab.kos.txt" \
        --nodes "$procs" --threads "$threads" --test-fraction 0.1 --seed 1 \
        --out "$TMP/plan-kos" >&2
    corpora+=(kos)
fi

median() { sort -g | awk '{a[NR]=$1} END {print NR ? ((NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2) : 0}'; }
field() { grep -o "\"$1\": [-0-9.e+]*" "$2" | awk '{print $2}'; }

printf '{"benchmark": "lda", "config": {"procs": %s, "threads": %s, "iters": %s, "mh_steps": %s, "generated": {"docs": %s, "vocab": %s, "true_topics": %s, "doc_len": %s}},\n "runs": [' \
    "$procs" "$threads" "$iters" "$mh_steps" "$docs" "$vocab" "$true_topics" "$doc_len"
sep=""
for corpus in "${corpora[@]}"; do
    for K in ${topics//,/ }; do
        for s in ${samplers//,/ }; do
            alpha=$(awk -v k="$K" 'BEGIN { a = 50 / k; if (a > 0.1) a = 0.1; print a }')
            m="$TMP/metrics-$corpus-$K-$s.json"
            "$ROTOR" launch -n "$procs" -- "$ROTOR" train --plan "$TMP/plan-$corpus" --app lda \
                --topics "$K" --alpha "$alpha" --beta 0.01 --sampler "$s" --mh-steps "$mh_steps" \
                --iters "$iters" --eval-every "$eval_every" --seed 1 --metrics "$m" >&2
            tps=$(field tokens_per_s "$m" | awk '$1 > 0' | median)
            ll=$(field ll_per_token "$m" | tail -1)
            ppl=$(field perplexity "$m" | tail -1)
            printf '%s\n  {"corpus": "%s", "topics": %s, "alpha": %s, "sampler": "%s", "summary": {"median_tokens_per_s": %s, "final_ll_per_token": %s, "final_perplexity": %s},\n   "metrics": ' \
                "$sep" "$corpus" "$K" "$alpha" "$s" "$tps" "$ll" "${ppl:-null}"
            cat "$m"
            printf '  }'
            sep=","
        done
    done
done
printf '\n]}\n'
