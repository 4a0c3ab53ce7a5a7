#!/usr/bin/env bash
# rotor infer on held-out documents of a planted corpus (20 topics): the
# inferred mixtures are close to the planted ones (mean total-variation
# distance < 0.25, under a third of the uniform mixture's); words the model
# never saw are counted and reported; the result is the same on 1 and 3
# threads and from standard input, another seed gives another result; the
# document-completion perplexity is within 10% of training's on its own
# held-out documents; a rating model is refused.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lda_lib.sh"
"$ROTOR" gen lda --docs 2200 --vocab 1000 --topics 20 --alpha 0.1 --beta 0.01 --doc-len 100 \
    --seed 7 --out "$TMP/gen.txt" >/dev/null
# documents 1..2000 train; 2001..2200 are new (renumbered 1..200), with two
# words the model never saw (ids 1001, 1002: 3 tokens) added to documents 1 and 2
awk -v T="$TMP" 'NR <= 3 { next } $1 <= 2000 { print > T "/train.body"; next }
                 { print $1 - 2000, $2, $3 > T "/new.body" }' "$TMP/gen.txt"
printf '1 1001 2\n2 1002 1\n' >>"$TMP/new.body"
{ echo 2000; echo 1000; wc -l <"$TMP/train.body"; cat "$TMP/train.body"; } >"$TMP/train.txt"
{ echo 200; echo 1002; wc -l <"$TMP/new.body"; cat "$TMP/new.body"; } >"$TMP/new.txt"

"$ROTOR" partition --app lda --input "$TMP/train.txt" --nodes 1 --threads 2 --test-fraction 0.1 \
    --seed 3 --out "$TMP/plan" -q >/dev/null || fail "partition"
"$ROTOR" train --plan "$TMP/plan" "${LDA_OPTS[@]}" --iters 100 --eval-every 50 --seed 3 \
    --out "$TMP/model" >"$TMP/train.log" 2>&1 || { cat "$TMP/train.log"; fail "train"; }
train_ppl=$(perplexity_at 100 "$TMP/train.log")

infer=(infer --model "$TMP/model" --iters 50 --seed 5)
"$ROTOR" "${infer[@]}" --input "$TMP/new.txt" --threads 1 --out "$TMP/i1" >"$TMP/i1.out" 2>"$TMP/i1.err" ||
    { cat "$TMP/i1.err"; fail "infer"; }
cat "$TMP/i1.out" >&2
grep -q '^infer: 200 documents (0 without a model word), 20[0-9]* tokens; 2 words the model lacks (3 tokens' "$TMP/i1.out" ||
    fail "unknown words not reported as 2 words, 3 tokens"
for f in doc_topic.npy docs.txt doc_topics.txt infer.json; do
    [ -s "$TMP/i1/$f" ] || fail "no $f"
done
[ "$(wc -l <"$TMP/i1/doc_topics.txt")" = 200 ] || fail "doc_topics.txt: expected 200 lines"
[ "$(head -1 "$TMP/i1/doc_topics.txt" | wc -w)" = 4 ] || fail "doc_topics.txt: expected id + 3 topics"

single "$TMP/model"
read -r tv tv_uniform < <("$LDA_REF" mixtures "$TMP/gen.txt.mixtures.npy" 2000 \
    "$TMP/gen.txt.topics.npy" "$TMP/model.single/topic_word.npy" "$TMP/i1/doc_topic.npy" 0.1)
note "mean total-variation distance to the planted mixtures: $tv (uniform mixture: $tv_uniform)"
float_le "$tv" 0.25 || fail "mixtures not recovered: distance $tv > 0.25"
float_le "$tv" "$(awk -v u="$tv_uniform" 'BEGIN { print u / 3 }')" || fail "mixtures no better than uniform"

ppl=$(grep -o 'perplexity [0-9.]*' "$TMP/i1.out" | awk '{print $2}')
note "perplexity: infer $ppl, training's held-out documents $train_ppl"
rel_within "$ppl" "$train_ppl" 0.10 || fail "infer perplexity $ppl not within 10% of training's $train_ppl"

note "3 threads, and the documents from standard input, give the same bytes"
"$ROTOR" "${infer[@]}" --input "$TMP/new.txt" --threads 3 --out "$TMP/i3" -q >/dev/null || fail "infer -t 3"
"$ROTOR" "${infer[@]}" --input - --format uci --out "$TMP/is" -q <"$TMP/new.txt" >/dev/null ||
    fail "infer --input -"
for f in doc_topic.npy docs.txt doc_topics.txt; do
    cmp -s "$TMP/i1/$f" "$TMP/i3/$f" || fail "$f differs on 3 threads"
    cmp -s "$TMP/i1/$f" "$TMP/is/$f" || fail "$f differs when read from standard input"
done
"$ROTOR" "${infer[@]}" --input "$TMP/new.txt" --seed 6 --out "$TMP/i6" -q >/dev/null || fail "infer seed 6"
cmp -s "$TMP/i1/doc_topic.npy" "$TMP/i6/doc_topic.npy" && fail "another seed gave the same mixtures"

note "a rating model is refused, and a failed run leaves no output"
"$ROTOR" gen mf --rows 50 --cols 40 --nnz 500 --rank 2 --seed 1 --out "$TMP/r.txt" >/dev/null
"$ROTOR" partition --input "$TMP/r.txt" --nodes 1 --threads 1 --out "$TMP/rplan" -q >/dev/null
"$ROTOR" train --plan "$TMP/rplan" --app sgd-mf --epochs 1 --out "$TMP/rmodel" >/dev/null 2>&1
expect_status 2 "$ROTOR" infer --model "$TMP/rmodel" --input "$TMP/new.txt" --out "$TMP/bad"
grep -q "rotor infer needs a topic model" "$TMP/last.err" || fail "message: $(cat "$TMP/last.err")"
[ ! -e "$TMP/bad" ] || fail "a refused run left $TMP/bad"
echo "PASS"
