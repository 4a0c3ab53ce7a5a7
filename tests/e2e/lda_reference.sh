#!/usr/bin/env bash
# LDA against a plain serial collapsed Gibbs sampler (tests/apps/lda_ref.c):
# same corpus, K, alpha, beta; ll/token after 50 sweeps within 1%.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lda_lib.sh"
gen_small_corpus
"$ROTOR" partition --app lda --input "$TMP/gen.txt" --nodes 1 --threads 2 --seed 3 \
    --out "$TMP/plan" >/dev/null 2>&1 || fail "partition"
"$LDA_REF" gibbs --input "$TMP/gen.txt" --topics 20 --alpha 0.1 --beta 0.01 --iters 50 \
    --eval-every 50 >"$TMP/ref.out" 2>/dev/null || fail "reference"
ref=$(awk '$2 == 50 { print $4 }' "$TMP/ref.out")
[ -n "$ref" ] || fail "no reference ll"
for s in "sparse" "mh --mh-steps 8"; do
    "$ROTOR" train --plan "$TMP/plan" "${LDA_OPTS[@]}" --sampler $s --iters 50 --eval-every 50 \
        >"$TMP/train.log" 2>&1 || { cat "$TMP/train.log"; fail "train $s"; }
    got=$(ll_at 50 "$TMP/train.log")
    note "ll/token after 50 sweeps: $s $got, serial reference $ref"
    rel_within "$got" "$ref" 0.01 || fail "$s: ll/token $got not within 1% of the reference $ref"
done
echo "PASS"
