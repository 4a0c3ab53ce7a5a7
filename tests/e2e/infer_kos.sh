#!/usr/bin/env bash
# rotor infer on UCI KOS: a model trained with 10% of the documents held out
# (K=50, 100 sweeps); the held-out documents, given to rotor infer as a new
# corpus with the training seed (so the same completion halves), get a
# perplexity within 5% of the document-completion perplexity the training
# run reports for them.  Skips when the data set is absent.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lda_lib.sh"
docword=$(shared_data uci-kos/docword.kos.txt)
vocab=$(shared_data uci-kos/vocab.kos.txt)
"$ROTOR" partition --app lda --input "$docword" --vocab "$vocab" --nodes 1 --threads 2 \
    --test-fraction 0.1 --seed 1 --out "$TMP/plan" -q >/dev/null || fail "partition"
"$ROTOR" train --plan "$TMP/plan" --app lda --topics 50 --alpha 0.1 --beta 0.01 --iters 100 \
    --eval-every 50 --seed 4 --out "$TMP/model" >"$TMP/train.log" 2>&1 ||
    { cat "$TMP/train.log"; fail "train"; }
train_ppl=$(perplexity_at 100 "$TMP/train.log")
# The held-out documents: those not in the plan's rows.ids, in input order, renumbered.
awk -v R="$TMP/plan/rows.ids" -v T="$TMP" '
    BEGIN { while ((getline line < R) > 0) train[line] = 1 }
    FNR <= 3 { next }
    !($1 in train) { if (!($1 in id)) id[$1] = ++n; print id[$1], $2, $3 > T "/held.body" }
    END { print n > T "/held.n" }' "$docword"
{ cat "$TMP/held.n"; sed -n 2p "$docword"; wc -l <"$TMP/held.body"; cat "$TMP/held.body"; } >"$TMP/held.txt"
"$ROTOR" infer --model "$TMP/model" --input "$TMP/held.txt" --vocab "$vocab" --iters 100 \
    --seed 4 --threads 2 --out "$TMP/inf" >"$TMP/inf.out" 2>"$TMP/inf.err" ||
    { cat "$TMP/inf.err"; fail "infer"; }
cat "$TMP/inf.out" >&2
ppl=$(grep -o 'perplexity [0-9.]*' "$TMP/inf.out" | awk '{print $2}')
note "held-out documents ($(cat "$TMP/held.n")): infer perplexity $ppl, training's $train_ppl"
grep -q "0 words the model lacks" "$TMP/inf.out" || fail "held-out words should all be known"
rel_within "$ppl" "$train_ppl" 0.05 || fail "infer perplexity $ppl not within 5% of training's $train_ppl"
echo "PASS"
