#!/usr/bin/env bash
# LDA on a generated corpus with 20 known topics: 2 processes x 2 threads
# recover them (mean best-match cosine >= 0.9 after 100 sweeps, every
# sampler), reruns are bit-identical, and so is every other split of the
# plan's 4 workers (serial replay, 1 process x 4 threads); another seed gives
# another model (so the equal runs are not equal by doing nothing).  The
# progressive initial sweep and exact sweeps (first or later) split alike,
# and so does the sparse sampler on document lists (K > 512).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lda_lib.sh"
launch_or_skip
gen_small_corpus
"$ROTOR" partition --app lda --input "$TMP/gen.txt" --nodes 2 --threads 2 --test-fraction 0.1 \
    --seed 3 --out "$TMP/plan" >"$TMP/part.out" 2>"$TMP/part.err" || { cat "$TMP/part.err"; fail "partition"; }
grep -q "imbalance" "$TMP/part.out" || fail "partition does not report the imbalance"

for s in sparse mh warp cycle; do
    note "sampler $s: 2 processes x 2 threads, 100 sweeps"
    train=(train --plan "$TMP/plan" "${LDA_OPTS[@]}" --sampler "$s" --iters 100 --eval-every 20)
    "$ROTOR" launch -n 2 -- "$ROTOR" "${train[@]}" --out "$TMP/m-$s" >"$TMP/$s.log" 2>&1 ||
        { cat "$TMP/$s.log"; fail "train $s"; }
    single "$TMP/m-$s"
    cos=$("$LDA_REF" cosine "$TMP/gen.txt.topics.npy" "$TMP/m-$s.single/topic_word.npy")
    note "$s: mean best-match cosine $cos, ll/token $(ll_at 100 "$TMP/$s.log"), perplexity $(perplexity_at 100 "$TMP/$s.log")"
    float_le 0.9 "$cos" || fail "$s: topics not recovered (cosine $cos < 0.9)"
    float_le "$(ll_at 0 "$TMP/$s.log")" "$(ll_at 100 "$TMP/$s.log")" || fail "$s: ll/token fell"
    float_le "$(perplexity_at 100 "$TMP/$s.log")" "$(perplexity_at 20 "$TMP/$s.log")" ||
        fail "$s: held-out perplexity rose"

    note "$s: rerun, serial replay and 1 x 4 threads must be bit-identical"
    "$ROTOR" launch -n 2 -- "$ROTOR" "${train[@]}" --out "$TMP/m-$s-again" >"$TMP/$s-again.log" 2>&1 ||
        fail "rerun $s"
    "$ROTOR" "${train[@]}" --serial --out "$TMP/m-$s-serial" >"$TMP/$s-serial.log" 2>&1 || fail "serial $s"
    "$ROTOR" "${train[@]}" --threads 4 --out "$TMP/m-$s-t4" >"$TMP/$s-t4.log" 2>&1 || fail "1x4 $s"
    # (two one-sweep runs suffice to show the seed matters, and stay cheap under ASan)
    for seed in 1 2; do
        "$ROTOR" "${train[@]}" --iters 1 --threads 4 --seed $seed --out "$TMP/m-$s-one$seed" \
            >"$TMP/$s-one$seed.log" 2>&1 || fail "one sweep, seed $seed, $s"
    done
    single "$TMP/m-$s-one1" "$TMP/m-$s-one2" "$TMP/m-$s-again" "$TMP/m-$s-serial" "$TMP/m-$s-t4"
    cmp -s "$TMP/m-$s-one1.single/word_topic.npy" "$TMP/m-$s-one2.single/word_topic.npy" &&
        fail "$s: another seed gave the same word-topic counts"
    for other in again serial t4; do
        for f in word_topic.npy doc_topic.npy topic_word.npy topics.txt; do
            cmp -s "$TMP/m-$s.single/$f" "$TMP/m-$s-$other.single/$f" || fail "$s: $f differs in the $other run"
        done
        diff <(ll_lines "$TMP/$s.log") <(ll_lines "$TMP/$s-$other.log") >&2 ||
            fail "$s: metrics differ in the $other run"
    done
done

# The progressive initial sweep and the exact first sweeps (apps/lda_init.c)
# keep the same promise: every split of the workers gives the same model.
# So do exact sweeps in the middle of the run (--exact-after: sweeps 3-4
# exact, then back to the sampler's own steps).
for s in warp cycle mh; do
    note "$s --exact-after 2 --exact-sweeps 2: 2 x 2 and serial replay bit-identical"
    train=(train --plan "$TMP/plan" "${LDA_OPTS[@]}" --sampler "$s" --exact-after 2 --exact-sweeps 2
           --iters 6 --eval-every 1)
    "$ROTOR" launch -n 2 -- "$ROTOR" "${train[@]}" --out "$TMP/w-$s" >"$TMP/w-$s.log" 2>&1 ||
        { cat "$TMP/w-$s.log"; fail "train $s --exact-after"; }
    "$ROTOR" "${train[@]}" --serial --out "$TMP/w-$s-serial" >"$TMP/w-$s-serial.log" 2>&1 ||
        fail "serial $s --exact-after"
    single "$TMP/w-$s" "$TMP/w-$s-serial"
    same_as "w-$s" "w-$s-serial" word_topic.npy doc_topic.npy
    diff <(ll_lines "$TMP/w-$s.log") <(ll_lines "$TMP/w-$s-serial.log") >&2 ||
        fail "$s --exact-after: metrics differ in the serial run"
    # sweeps 1-2 are the plain sampler's, sweep 3 is not
    "$ROTOR" "${train[@]}" --exact-sweeps 0 --iters 3 --serial >"$TMP/w-$s-plain.log" 2>&1 ||
        fail "plain $s"
    diff <(ll_lines "$TMP/w-$s.log" | head -3) <(ll_lines "$TMP/w-$s-plain.log" | head -3) >&2 ||
        fail "$s --exact-after 2: sweeps 1-2 are not the plain sampler's"
    [ "$(ll_at 3 "$TMP/w-$s.log")" != "$(ll_at 3 "$TMP/w-$s-plain.log")" ] ||
        fail "$s --exact-after 2: sweep 3 is the plain sampler's"
done
# three_splits NAME ARGS...: rotor ARGS as 2 processes x 2 threads ($TMP/NAME),
# the serial replay (NAME-serial) and 1 process x 4 threads (NAME-t4), each
# exported (NAME.single ...) for comparing
three_splits() {
    local name=$1
    shift
    "$ROTOR" launch -n 2 -- "$ROTOR" "$@" --out "$TMP/$name" >"$TMP/$name.log" 2>&1 ||
        { cat "$TMP/$name.log"; fail "train $name"; }
    "$ROTOR" "$@" --serial --out "$TMP/$name-serial" >"$TMP/$name-serial.log" 2>&1 || fail "serial $name"
    "$ROTOR" "$@" --threads 4 --out "$TMP/$name-t4" >"$TMP/$name-t4.log" 2>&1 || fail "1x4 $name"
    single "$TMP/$name" "$TMP/$name-serial" "$TMP/$name-t4"
}
for s in warp cycle mh; do
    note "$s --init progressive --exact-sweeps 3: 2 x 2, serial replay and 1 x 4 bit-identical"
    train=(train --plan "$TMP/plan" "${LDA_OPTS[@]}" --sampler "$s" --init progressive --exact-sweeps 3
           --iters 6 --eval-every 3)
    three_splits "x-$s" "${train[@]}"
    float_le "$(ll_at 0 "$TMP/$s.log")" "$(ll_at 0 "$TMP/x-$s.log")" ||
        fail "$s: the progressive start is below the random one"
    float_le "$(ll_at 0 "$TMP/x-$s.log")" "$(ll_at 6 "$TMP/x-$s.log")" || fail "$s: ll/token fell"
    for other in serial t4; do
        for f in word_topic.npy doc_topic.npy; do
            cmp -s "$TMP/x-$s.single/$f" "$TMP/x-$s-$other.single/$f" ||
                fail "$s --init progressive: $f differs in the $other run"
        done
        diff <(ll_lines "$TMP/x-$s.log") <(ll_lines "$TMP/x-$s-$other.log") >&2 ||
            fail "$s --init progressive: metrics differ in the $other run"
    done
done

# Above LDA_DENSE_K (512) the sparse sampler keeps each document's counts in
# its topic list alone (apps/lda_bucket.c): the same promise, from random
# and from progressive topics; and it gains likelihood.
for init in random progressive; do
    note "sparse at K = 600 (document lists), --init $init: 2 x 2, serial replay and 1 x 4 bit-identical"
    train=(train --plan "$TMP/plan" --app lda --topics 600 --alpha 0.1 --beta 0.01 --sampler sparse
           --init "$init" --iters 4 --eval-every 2)
    three_splits "l-$init" "${train[@]}"
    float_le "$(ll_at 2 "$TMP/l-$init.log")" "$(ll_at 4 "$TMP/l-$init.log")" ||
        fail "K = 600 --init $init: ll/token fell"
    for other in serial t4; do
        same_as "l-$init" "l-$init-$other" word_topic.npy doc_topic.npy
        diff <(ll_lines "$TMP/l-$init.log") <(ll_lines "$TMP/l-$init-$other.log") >&2 ||
            fail "K = 600 --init $init: metrics differ in the $other run"
    done
done

note "rotor topics prints every topic, as topics.txt lists them (one owner: the app)"
"$ROTOR" topics --model "$TMP/m-sparse" --top 5 >"$TMP/topics.out"
[ "$(grep -c '^topic ' "$TMP/topics.out")" = 20 ] || fail "rotor topics: expected 20 topics"
[ "$(head -1 "$TMP/topics.out" | wc -w)" = 8 ] || fail "rotor topics: expected 5 words per topic"
"$ROTOR" topics --model "$TMP/m-sparse" --top 20 >"$TMP/topics20.out"
diff "$TMP/m-sparse/topics.txt" "$TMP/topics20.out" >&2 ||
    fail "rotor topics on the saved model differs from the topics.txt written at save time"
note "rotor topics refuses a rating model, rotor eval a topic model"
st=0; "$ROTOR" eval --model "$TMP/m-sparse" --input "$TMP/gen.txt" >/dev/null 2>"$TMP/e.err" || st=$?
[ "$st" = 2 ] && grep -q "model is from --app lda" "$TMP/e.err" || fail "eval of an lda model: exit $st"
echo "PASS"
