#!/usr/bin/env bash
# 16 local processes (tiny data) train sgd-mf, cd-mf and lda (also with
# --sync-every 3) and each model equals the single-thread replay of the
# same plan (--serial): the tree
# collectives (folded pairs, several doubling rounds) keep the serial-replay
# guarantee at a rank count where they differ most from a star.
source "$(dirname "$0")/lib.sh"

"$ROTOR" gen mf --rows 640 --cols 320 --nnz 8000 --rank 4 --noise 0.1 --seed 7 \
    --out "$TMP/mf.txt" --test-out "$TMP/mf_test.txt" --test-fraction 0.1 2>/dev/null ||
    fail "gen mf"
"$ROTOR" partition --input "$TMP/mf.txt" --test "$TMP/mf_test.txt" --nodes 16 --threads 1 \
    --seed 7 --out "$TMP/mfplan" >/dev/null 2>&1 || fail "partition mf"
"$ROTOR" gen lda --docs 320 --vocab 320 --topics 6 --doc-len 30 --seed 7 \
    --out "$TMP/corpus.txt" >/dev/null 2>&1 || fail "gen lda"
"$ROTOR" partition --app lda --input "$TMP/corpus.txt" --nodes 16 --threads 1 --seed 7 \
    --test-fraction 0.1 --out "$TMP/ldaplan" >/dev/null 2>&1 || fail "partition lda"

check() { # check NAME FILES -- TRAIN ARGS...
    local name=$1 files=$2; shift 3
    "$ROTOR" launch -n 16 -- "$ROTOR" "$@" --out "$TMP/$name.16" 2>"$TMP/$name.16.log" ||
        { tail -20 "$TMP/$name.16.log" >&2; fail "$name: 16-process run"; }
    "$ROTOR" "$@" --serial --out "$TMP/$name.serial" 2>"$TMP/$name.serial.log" ||
        { tail -20 "$TMP/$name.serial.log" >&2; fail "$name: serial run"; }
    single "$TMP/$name.16" "$TMP/$name.serial"
    for f in $files; do
        cmp -s "$TMP/$name.16.single/$f" "$TMP/$name.serial.single/$f" ||
            fail "$name: $f of the 16-process run differs from the serial replay"
    done
}
check sgd "W.npy H.npy" -- train --plan "$TMP/mfplan" --app sgd-mf --rank 4 --epochs 3 --seed 3
check cd "W.npy H.npy" -- train --plan "$TMP/mfplan" --app cd-mf --rank 3 --outer 1 --inner 1 \
    --seed 3
check lda "word_topic.npy doc_topic.npy" -- train --plan "$TMP/ldaplan" --app lda --topics 6 \
    --iters 3 --seed 3
# Topic totals exchanged every 3 steps: still equal to the serial replay,
# and a different model from exchanging every step.
check lda3 "word_topic.npy doc_topic.npy" -- train --plan "$TMP/ldaplan" --app lda --topics 6 \
    --iters 3 --seed 3 --sync-every 3
cmp -s "$TMP/lda.16.single/doc_topic.npy" "$TMP/lda3.16.single/doc_topic.npy" &&
    fail "lda --sync-every 3 gave the same model as --sync-every 1"
grep -q 'epoch   3' "$TMP/sgd.16.log" || fail "sgd run did not log 3 epochs"
echo PASS
