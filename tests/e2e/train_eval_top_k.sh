#!/bin/bash
# train_eval_top_k.sh - `rotor train --eval-top-k K`: the per-epoch ranking
# metrics (precision@K, recall@K, NDCG@K, MAP@K of the plan's test ratings,
# training items excluded) of the last epoch equal what `rotor eval --top-k
# K` gives on the model saved then (explicit sgd-mf with biases and centring,
# the same with --validation-fraction, whose held-out ratings are still
# training items to exclude and whose saved model is the best epoch's, and
# --implicit), and every epoch's figures are the same bits on 2 processes x
# 2 threads, 1 x 4 threads and --serial.
source "$(dirname "$0")/lib.sh"
small_plans
K=5

# metrics_of FILE: one line per epoch, "precision recall ndcg map users" (%.17g)
metrics_of() {
    python3 -c '
import json, sys
for e in json.load(open(sys.argv[1]))["epochs"]:
    print(" ".join("%.17g" % e[k] for k in ("precision_at_k", "recall_at_k", "ndcg_at_k", "map_at_k", "ranked_users")))' "$1"
}

for mode in explicit validation implicit; do
    args=(train --plan "$TMP/mfplan" --app sgd-mf --rank 6 --epochs 4 --seed 3 --eval-top-k $K)
    [ $mode != implicit ] || args+=(--implicit --negatives 2)
    [ $mode != validation ] || args+=(--validation-fraction 0.2)
    run_logged "$mode-a" "$ROTOR" launch -n 2 -- "$ROTOR" "${args[@]}" --metrics "$TMP/$mode-a.json"
    run_logged "$mode-s" "$ROTOR" "${args[@]}" --serial --metrics "$TMP/$mode-s.json"
    run_logged "$mode-t4" "$ROTOR" "${args[@]}" --threads 4 --metrics "$TMP/$mode-t4.json"
    grep -q "p@$K .*ndcg@$K" "$TMP/$mode-a.log" || fail "$mode: no p@$K / ndcg@$K in the epoch log"
    metrics_of "$TMP/$mode-a.json" >"$TMP/$mode-a.m"
    [ "$(wc -l <"$TMP/$mode-a.m")" = 4 ] || fail "$mode: $(wc -l <"$TMP/$mode-a.m") epochs of metrics"
    for r in s t4; do
        metrics_of "$TMP/$mode-$r.json" >"$TMP/$mode-$r.m"
        cmp -s "$TMP/$mode-a.m" "$TMP/$mode-$r.m" ||
            fail "$mode: per-epoch ranking metrics of run $r differ from 2 x 2: $(paste "$TMP/$mode-a.m" "$TMP/$mode-$r.m")"
    done
    # The epoch saved (the last, or the best by validation) against rotor eval
    # on the saved model (its plan gives the exclusions); eval prints 9
    # significant digits.
    saved=$(grep -o '"best_epoch": [0-9]*' "$TMP/$mode-a/model.json" | tr -dc '0-9' || true)
    [ $mode != validation ] || [ -n "$saved" ] || fail "validation: model.json has no best_epoch"
    saved=${saved:-4}
    "$ROTOR" eval --model "$TMP/$mode-a" --input "$TMP/mf_test.txt" --top-k $K --json \
        >"$TMP/$mode-eval.json" 2>/dev/null || fail "$mode: eval"
    python3 - "$TMP/$mode-eval.json" "$TMP/$mode-a.m" "$saved" <<'PY' || fail "$mode: epoch $saved differs from rotor eval --top-k $K"
import json, sys
m = json.load(open(sys.argv[1]))["ranking"]["model"]
last = [float(x) for x in open(sys.argv[2]).read().split("\n")[int(sys.argv[3]) - 1].split()]
want = [m["precision"], m["recall"], m["ndcg"], m["map"]]
bad = [(a, b) for a, b in zip(last, want) if abs(a - b) > 1e-8 * max(1.0, abs(b))]
if bad or not 0 < last[0] <= 1:
    sys.exit("train %s vs eval %s" % (last, want))
PY
done
echo PASS
