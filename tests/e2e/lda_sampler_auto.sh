#!/usr/bin/env bash
# lda_sampler_auto.sh - `--sampler auto` (the default) resolves to one
# concrete sampler by K: sparse up to LDA_AUTO_EXACT_MAX_K topics and above
# LDA_AUTO_WARP_MAX_K (where it runs on document lists), warp between.  Each side gives the bytes of the sampler named outright, the log
# names it, and the saved model.json records it (not "auto"), so a resumed
# or replayed run samples the same chain.
source "$(dirname "$0")/lib.sh"

small_plans
base=(train --plan "$TMP/ldaplan" --app lda --iters 3 --seed 3 --threads 4)

# side K SAMPLER: the default and --sampler auto at K topics are the
# explicit SAMPLER's run, byte for byte.
side() {
    local K=$1 want=$2
    note "K = $K: auto is $want"
    run_logged "default$K" "$ROTOR" "${base[@]}" --topics "$K"
    run_logged "auto$K" "$ROTOR" "${base[@]}" --topics "$K" --sampler auto
    run_logged "$want$K" "$ROTOR" "${base[@]}" --topics "$K" --sampler "$want"
    grep -q "lda: $K topics, sampler $want\$" "$TMP/default$K.log" ||
        { cat "$TMP/default$K.log" >&2; fail "the log of K = $K does not name $want"; }
    grep -q "\"sampler\": *\"$want\"" "$TMP/default$K/model.json" ||
        fail "model.json of K = $K does not record sampler $want"
    single "$TMP/default$K" "$TMP/auto$K" "$TMP/$want$K"
    same_as "$want$K" "default$K" word_topic.npy doc_topic.npy
    same_as "$want$K" "auto$K" word_topic.npy doc_topic.npy
}
side 8 sparse
side 385 warp
side 384 sparse
side 512 warp
side 513 sparse
echo "PASS: --sampler auto"
