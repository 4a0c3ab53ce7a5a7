#!/usr/bin/env bash
# golden_hashes.sh - the model bytes of fixed runs do not change under
# refactoring.  Each run below (sgd-mf, cd-mf and lda; one process, and two
# processes where the run says so; lda with its default and its warp
# sampler) writes a model whose exported files must
# hash to the SHA-256 recorded here.  The 2-process runs hand every step to
# the worker threads (--inline-steps no); the 1-process runs' tiny steps run
# inline on the main thread (auto): the same bytes either way.  A change that legitimately changes the math updates
# these hashes in the same commit, saying why.
#   ROTOR_GOLDEN_PRINT=1 prints the current hashes instead of checking them.
source "$(dirname "$0")/lib.sh"

small_plans

sgd=(train --plan "$TMP/mfplan" --app sgd-mf --rank 8 --epochs 4 --seed 3)
cdmf=(train --plan "$TMP/mfplan" --app cd-mf --rank 6 --outer 2 --inner 2 --seed 3)
lda=(train --plan "$TMP/ldaplan" --app lda --topics 8 --iters 6 --seed 3)

run_logged sgd1 "$ROTOR" "${sgd[@]}" --threads 4
run_logged sgd2 "$ROTOR" launch -n 2 -- "$ROTOR" "${sgd[@]}" --inline-steps no
run_logged cd1 "$ROTOR" "${cdmf[@]}" --threads 4
run_logged cd2 "$ROTOR" launch -n 2 -- "$ROTOR" "${cdmf[@]}" --inline-steps no
run_logged lda1 "$ROTOR" "${lda[@]}" --threads 4
run_logged lda2 "$ROTOR" launch -n 2 -- "$ROTOR" "${lda[@]}" --inline-steps no
run_logged warp1 "$ROTOR" "${lda[@]}" --sampler warp --threads 4
run_logged warp2 "$ROTOR" launch -n 2 -- "$ROTOR" "${lda[@]}" --sampler warp --inline-steps no

# The runs save per-rank parts; rotor export merges them into the
# single-file model, whose bytes are the ones pinned here (the same bytes
# the saves wrote before models were sharded).
single "$TMP/sgd1" "$TMP/sgd2" "$TMP/cd1" "$TMP/cd2" "$TMP/lda1" "$TMP/lda2" "$TMP/warp1" "$TMP/warp2"

actual() {
    for r in sgd1 sgd2; do
        for f in W.npy H.npy; do echo "$r/$f $(sha256sum <"$TMP/$r.single/$f" | cut -c1-64)"; done
    done
    for r in cd1 cd2; do
        for f in W.npy H.npy row_bias.npy col_bias.npy; do
            echo "$r/$f $(sha256sum <"$TMP/$r.single/$f" | cut -c1-64)"
        done
    done
    for r in lda1 lda2 warp1 warp2; do
        for f in word_topic.npy doc_topic.npy; do
            echo "$r/$f $(sha256sum <"$TMP/$r.single/$f" | cut -c1-64)"
        done
    done
}

if [ -n "${ROTOR_GOLDEN_PRINT:-}" ]; then
    actual
    exit 0
fi

expected() {
    cat <<'HASHES'
sgd1/W.npy 3479f59133d14d88a14dd18fae73932618e335a238243cbff144fde1f043f81f
sgd1/H.npy 52649eeff743e896b6700d5287d66a84300efd284813c6d1bd8356d9cd877554
sgd2/W.npy 3479f59133d14d88a14dd18fae73932618e335a238243cbff144fde1f043f81f
sgd2/H.npy 52649eeff743e896b6700d5287d66a84300efd284813c6d1bd8356d9cd877554
cd1/W.npy 8e868483fd6c39c596d7aa16e8d23d9f52599178ce6d789a65d5d4e86a4b6db6
cd1/H.npy cc648fbd1e08b5750827fbec2408974685be2db01d1ee37c29edbd530b6ac850
cd1/row_bias.npy 54190c28283637ce812c34676f580f7454ce3705afd2effe995f0ea163a8cf04
cd1/col_bias.npy e0c9555384a425ebcbe4ab71f721d4fc437a425b38ea5370d8e89f98b10ee832
cd2/W.npy 8e868483fd6c39c596d7aa16e8d23d9f52599178ce6d789a65d5d4e86a4b6db6
cd2/H.npy cc648fbd1e08b5750827fbec2408974685be2db01d1ee37c29edbd530b6ac850
cd2/row_bias.npy 54190c28283637ce812c34676f580f7454ce3705afd2effe995f0ea163a8cf04
cd2/col_bias.npy e0c9555384a425ebcbe4ab71f721d4fc437a425b38ea5370d8e89f98b10ee832
lda1/word_topic.npy b9e64095c97b9394eeb797477da9b8873c8615d1187291b221b87fbcdc2ea493
lda1/doc_topic.npy 2a90c474704efd678efc9b49521b337fdbcd15647b14774ef203eed3e068361d
lda2/word_topic.npy b9e64095c97b9394eeb797477da9b8873c8615d1187291b221b87fbcdc2ea493
lda2/doc_topic.npy 2a90c474704efd678efc9b49521b337fdbcd15647b14774ef203eed3e068361d
warp1/word_topic.npy c6dc58fb9a3e4407b107ec661b7d7d1669af6090c4d695d585bd00a2fa9a7f88
warp1/doc_topic.npy ff8f4b77c9471d45d15a7ed034f9b8bbd388e140e9113a8e9b2a67ff2cbcb8cc
warp2/word_topic.npy c6dc58fb9a3e4407b107ec661b7d7d1669af6090c4d695d585bd00a2fa9a7f88
warp2/doc_topic.npy ff8f4b77c9471d45d15a7ed034f9b8bbd388e140e9113a8e9b2a67ff2cbcb8cc
HASHES
}
diff <(expected) <(actual) >&2 || fail "model bytes differ from the recorded golden hashes"
echo PASS
