#!/usr/bin/env bash
# LDA on UCI KOS blog entries (3430 docs, 6906 words, 467714 tokens), K=50,
# both samplers: ll/token rises and flattens, held-out perplexity falls, and
# the top words are real words; the metrics split each span's wall beyond
# the cells into fractions of it.  Skips when the data set is absent.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lda_lib.sh"
docword=$(shared_data uci-kos/docword.kos.txt)
vocab=$(shared_data uci-kos/vocab.kos.txt)
"$ROTOR" partition --app lda --input "$docword" --vocab "$vocab" --nodes 1 --threads 2 \
    --test-fraction 0.1 --seed 1 --out "$TMP/plan" >/dev/null 2>"$TMP/part.err" ||
    { cat "$TMP/part.err"; fail "partition"; }
for s in sparse mh; do
    "$ROTOR" train --plan "$TMP/plan" --app lda --topics 50 --alpha 0.1 --beta 0.01 \
        --sampler "$s" --mh-steps 4 --iters 60 --eval-every 10 --out "$TMP/m-$s" --top 10 \
        --metrics "$TMP/$s.json" >"$TMP/$s.log" 2>&1 || { cat "$TMP/$s.log"; fail "train $s"; }
    # uneven cells, hand-overs and the topic totals: parts of the span's wall
    # (the same sweeps' seconds), so each in [0, 1] and together below 1
    if command -v python3 >/dev/null; then
        python3 - "$TMP/$s.json" <<'EOF' || fail "$s: metrics' wall split out of range"
import json, sys
for e in json.load(open(sys.argv[1]))["epochs"]:
    parts = [e["imbalance_frac"], e["handover_frac"], e["step_end_frac"]]
    if min(parts) < 0 or sum(parts) >= 1:
        sys.exit("iter %d: %s" % (e["iter"], parts))
EOF
    fi
    grep "lda iter" "$TMP/$s.log" | sed 's/^/    /' >&2
    l10=$(ll_at 10 "$TMP/$s.log"); l30=$(ll_at 30 "$TMP/$s.log"); l60=$(ll_at 60 "$TMP/$s.log")
    l0=$(ll_at 0 "$TMP/$s.log")
    float_le "$l0" "$l10" && float_le "$l10" "$l30" && float_le "$l30" "$l60" ||
        fail "$s: ll/token does not rise ($l0 $l10 $l30 $l60)"
    # flattening: the last 30 sweeps gain less than sweeps 10..30
    awk -v a="$l10" -v b="$l30" -v c="$l60" 'BEGIN { exit !(c - b < b - a) }' ||
        fail "$s: ll/token does not flatten ($l10 $l30 $l60)"
    float_le "$(perplexity_at 60 "$TMP/$s.log")" "$(perplexity_at 10 "$TMP/$s.log")" ||
        fail "$s: held-out perplexity rose"
    head -5 "$TMP/m-$s/topics.txt" | sed 's/^/    /' >&2
    [ "$(grep -c '^topic ' "$TMP/m-$s/topics.txt")" = 50 ] || fail "$s: expected 50 topics"
    # readable: every top word is a vocabulary word, and the political
    # vocabulary of 2004 shows up among the top words
    grep -Eqw 'bush|kerry|iraq|democratic|war' "$TMP/m-$s/topics.txt" || fail "$s: unreadable topics"
done
echo "PASS"
