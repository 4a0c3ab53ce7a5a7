#!/usr/bin/env bash
# golden_hashes.sh - the model bytes of fixed runs do not change under
# refactoring.  Each run below (sgd-mf, cd-mf and lda; one process, and two
# processes where the run says so; lda with its default and its warp
# sampler, and above K = 512 its sparse sampler on document lists, packed
# and, where a document has more than 65535 tokens, not) writes a model
# whose exported files must
# hash to the SHA-256 recorded here.  The 2-process runs hand every step to
# the worker threads (--inline-steps no); the 1-process runs' tiny steps run
# inline on the main thread (auto): the same bytes either way.  The
# LDA runs pin their end checkpoint's topics too (state.z: the on-disk
# format, word-major whatever the layout in memory).  A change that
# legitimately changes the math updates these hashes in the same commit,
# saying why.
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
run_logged lda1 "$ROTOR" "${lda[@]}" --threads 4 --checkpoint "$TMP/lda1.ck"
run_logged lda2 "$ROTOR" launch -n 2 -- "$ROTOR" "${lda[@]}" --inline-steps no --checkpoint "$TMP/lda2.ck"
run_logged warp1 "$ROTOR" "${lda[@]}" --sampler warp --threads 4 --checkpoint "$TMP/warp1.ck"
run_logged warp2 "$ROTOR" launch -n 2 -- "$ROTOR" "${lda[@]}" --sampler warp --inline-steps no --checkpoint "$TMP/warp2.ck"
# K = 600: the exact sampler on document lists, which pack an entry in 4
# bytes, visited document-major (apps/lda_doc.c); a worker holding a
# document of 65536 tokens keeps its lists' topics and counts apart (a
# count might not fit 16 bits) and samples its visits word-major
# (apps/lda_bucket.c), one of 65535 tokens packs.
lists=(train --app lda --topics 600 --iters 4 --seed 3)
run_logged list1 "$ROTOR" "${lists[@]}" --plan "$TMP/ldaplan" --threads 4 --checkpoint "$TMP/list1.ck"
run_logged list2 "$ROTOR" launch -n 2 -- "$ROTOR" "${lists[@]}" --plan "$TMP/ldaplan" --inline-steps no --checkpoint "$TMP/list2.ck"
# K = 5000 (above LDA_DOC_ORDER_MAX_K): the document-major visit sorts each
# visit's tokens by document (doc_order); at 600 it follows the order built
# once (lda_doc_order_build): the same tokens in the same order either way.
run_logged list5k "$ROTOR" "${lists[@]/600/5000}" --plan "$TMP/ldaplan" --threads 4 \
    --checkpoint "$TMP/list5k.ck"
for len in 65535 65536; do # one long document among 300 short ones, in the line format
    awk -v len=$len 'BEGIN { printf "long long"; for (i = 0; i < len; i++) printf " w%d", i % 97
        print ""; for (d = 0; d < 300; d++) { printf "d%d d%d", d, d
        for (i = 0; i < 40; i++) printf " w%d", (d * 7 + i * i) % 400; print "" } }' >"$TMP/long$len.txt"
    "$ROTOR" partition --app lda --format lines --input "$TMP/long$len.txt" --nodes 2 --threads 2 \
        --test-fraction 0 --seed 5 --out "$TMP/longplan$len" >/dev/null 2>&1 || fail "partition long$len"
    run_logged "long$len" "$ROTOR" "${lists[@]}" --plan "$TMP/longplan$len" --threads 4 \
        --checkpoint "$TMP/long$len.ck"
done

# The runs save per-rank parts; rotor export merges them into the
# single-file model, whose bytes are the ones pinned here (the same bytes
# the saves wrote before models were sharded).
single "$TMP/sgd1" "$TMP/sgd2" "$TMP/cd1" "$TMP/cd2" "$TMP/lda1" "$TMP/lda2" "$TMP/warp1" "$TMP/warp2" \
    "$TMP/list1" "$TMP/list2" "$TMP/list5k" "$TMP/long65535" "$TMP/long65536"

# z_sections STATE: the bytes of STATE's "z" sections (the topics of its
# token sets), in file order (format: apps/app_state.c: "ROTORST1", then
# sections of a 16-byte tag, a u64 length, a u64 checksum and the data).
z_sections() {
    local f=$1 pos=8 size tag len
    size=$(stat -c %s "$f")
    while [ "$pos" -lt "$size" ]; do
        tag=$(dd if="$f" bs=16 iflag=skip_bytes skip="$pos" count=1 status=none | tr -d '\0')
        len=$(od -An -tu8 -j $((pos + 16)) -N 8 "$f" | tr -d ' ')
        if [ "$tag" = z ]; then
            dd if="$f" bs=64K iflag=skip_bytes,count_bytes skip=$((pos + 32)) count="$len" status=none
        fi
        pos=$((pos + 32 + len))
    done
}

# The training state keeps the list sampler's topics word-major whatever
# the layout in memory (apps/lda_core.c z_put / z_get; doc-major at K = 600,
# lda_doc_layout), so a state one build wrote resumes under another: the
# end checkpoint's "z" sections are pinned too, of every LDA run.  The
# counts the model holds are sums over z, which two assignments may share:
# z itself is written only in a checkpoint's state (a model has no place
# for it), so every LDA run above writes one; a checkpoint changes no bit
# of the run (checkpoint_resume.sh), and the model hashes pin that too.
# The z sections come in the same order from one process as from two (the
# plan's token sets, whichever rank holds them): the same hash.
state_z() { # state_z CKDIR
    local ck st
    ck=$(ls -d "$1"/ckpt-* 2>/dev/null | tail -1)
    [ -n "$ck" ] || fail "$1: no checkpoint, so no topics (z) to pin"
    for st in "$ck"/state-*.bin; do
        [ -f "$st" ] || fail "$ck: no state file"
        z_sections "$st"
    done | sha256sum | cut -c1-64
}

actual() {
    for r in sgd1 sgd2; do
        for f in W.npy H.npy; do echo "$r/$f $(sha256sum <"$TMP/$r.single/$f" | cut -c1-64)"; done
    done
    for r in cd1 cd2; do
        for f in W.npy H.npy row_bias.npy col_bias.npy; do
            echo "$r/$f $(sha256sum <"$TMP/$r.single/$f" | cut -c1-64)"
        done
    done
    for r in lda1 lda2 warp1 warp2 list1 list2 list5k long65535 long65536; do
        for f in word_topic.npy doc_topic.npy; do
            echo "$r/$f $(sha256sum <"$TMP/$r.single/$f" | cut -c1-64)"
        done
    done
    for r in lda1 lda2 warp1 warp2 list1 list2 list5k long65535 long65536; do
        echo "$r/state.z $(state_z "$TMP/$r.ck")"
    done
}

if [ -n "${ROTOR_GOLDEN_PRINT:-}" ]; then
    actual
    exit 0
fi

expected() {
    cat <<'HASHES'
sgd1/W.npy fa3db98d246272549dfa6771937f8fc5279556d99f517ea2727217b5da63521d
sgd1/H.npy 4ed4dfebeac341dfd13d64015e24a0912b7c82c547b2738feafa5004f5dd31b5
sgd2/W.npy fa3db98d246272549dfa6771937f8fc5279556d99f517ea2727217b5da63521d
sgd2/H.npy 4ed4dfebeac341dfd13d64015e24a0912b7c82c547b2738feafa5004f5dd31b5
cd1/W.npy b84896d7f8f99a8d4df00130b4af5add9dec59a11b8c806fc7684dc4d90903a7
cd1/H.npy 3acd78db363826f6cad36fd4a0b7664965debd43dc5ccdf16bc35c8232e7fa7c
cd1/row_bias.npy 4dcb2d41d586d7f8050f5f03e81ca3264b06fbcb5e78691beaf75fb4096ea9d3
cd1/col_bias.npy 7827cb0f3849ce34487c1b2edb7fb7ae9b6aedf51ebfce09c9728d2435d0f901
cd2/W.npy b84896d7f8f99a8d4df00130b4af5add9dec59a11b8c806fc7684dc4d90903a7
cd2/H.npy 3acd78db363826f6cad36fd4a0b7664965debd43dc5ccdf16bc35c8232e7fa7c
cd2/row_bias.npy 4dcb2d41d586d7f8050f5f03e81ca3264b06fbcb5e78691beaf75fb4096ea9d3
cd2/col_bias.npy 7827cb0f3849ce34487c1b2edb7fb7ae9b6aedf51ebfce09c9728d2435d0f901
lda1/word_topic.npy b9e64095c97b9394eeb797477da9b8873c8615d1187291b221b87fbcdc2ea493
lda1/doc_topic.npy 2a90c474704efd678efc9b49521b337fdbcd15647b14774ef203eed3e068361d
lda2/word_topic.npy b9e64095c97b9394eeb797477da9b8873c8615d1187291b221b87fbcdc2ea493
lda2/doc_topic.npy 2a90c474704efd678efc9b49521b337fdbcd15647b14774ef203eed3e068361d
warp1/word_topic.npy c6dc58fb9a3e4407b107ec661b7d7d1669af6090c4d695d585bd00a2fa9a7f88
warp1/doc_topic.npy ff8f4b77c9471d45d15a7ed034f9b8bbd388e140e9113a8e9b2a67ff2cbcb8cc
warp2/word_topic.npy c6dc58fb9a3e4407b107ec661b7d7d1669af6090c4d695d585bd00a2fa9a7f88
warp2/doc_topic.npy ff8f4b77c9471d45d15a7ed034f9b8bbd388e140e9113a8e9b2a67ff2cbcb8cc
list1/word_topic.npy b40bb418f805ddeb1db7829bbc2817e3e0f28a8cde996a6bb59296c5ae1aff08
list1/doc_topic.npy a5abf9c8f7f53daf58c37dfaf7be8edcda088658cf1620542de2ec630d3fff39
list2/word_topic.npy b40bb418f805ddeb1db7829bbc2817e3e0f28a8cde996a6bb59296c5ae1aff08
list2/doc_topic.npy a5abf9c8f7f53daf58c37dfaf7be8edcda088658cf1620542de2ec630d3fff39
list5k/word_topic.npy 8c0bf98274cd3494419ce243c59a3a8ebc92518c778ed78f81dc692cc698b4c7
list5k/doc_topic.npy 805a38d1e74d1b784b7c97ac2fbe248673c4dee6bd414960b5cbb3f2756dbe98
long65535/word_topic.npy fe7674c4d6696e3f392a8234b36b27046945b53c280eaabcfd890829531fa464
long65535/doc_topic.npy 6d507bf61b57c91a63fd9dc1d390db9b393d8ff7d65dcbfcefc2e9a24ef51fc4
long65536/word_topic.npy a783ae90055da8a95497ba13cad4ecaa7da167a952cd85c9cc2b23f4bca8d3b0
long65536/doc_topic.npy 981fde1785bc1e4da6b7630a80dba04bed6b252a7a9f3e6f9890cdabe3699d08
lda1/state.z 69a3b81b9754c3c9489039908d1b65a03f8deec320b36cf39a012d24ea24488e
lda2/state.z 69a3b81b9754c3c9489039908d1b65a03f8deec320b36cf39a012d24ea24488e
warp1/state.z f782a775f9b238859d1cd2c867e1669dc6da126d128667c32e07bccbe48b80a1
warp2/state.z f782a775f9b238859d1cd2c867e1669dc6da126d128667c32e07bccbe48b80a1
list1/state.z 09ce823a22bfff72842f149c436a639034e00cc8cbfc9e90f91d47e28dd9b682
list2/state.z 09ce823a22bfff72842f149c436a639034e00cc8cbfc9e90f91d47e28dd9b682
list5k/state.z c9b0e1e0b1d484b29454977d014e2d641a44135ff8f6e7edd7fda55e56a1cf44
long65535/state.z fe33d791bf107ebf75ff218f311e744da6331edad1bfdc8f4fb50ba2e8f97b39
long65536/state.z 66bfbcdb79a131e5dc2f54aec3333a3aa949a8399325522e83f3c1e416a19a19
HASHES
}
diff <(expected) <(actual) >&2 || fail "model (or state) bytes differ from the recorded golden hashes"
echo PASS
