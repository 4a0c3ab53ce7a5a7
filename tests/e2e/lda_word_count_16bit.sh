#!/usr/bin/env bash
# lda_word_count_16bit.sh - the document-major sparse sampler (K > 512,
# apps/lda_doc.c) packs a word's counts in 16 bits while it visits a block;
# a word whose count in a topic passes 65535 during a visit must not be
# packed (a count of 0xffff gaining a token carried into its entry's topic:
# log likelihood inf from sweep 20, and the model was not saved).  A word of
# 80000 tokens (400 in each of 200 documents, beside 100 rare words each)
# gathers in one topic within 30 sweeps at K = 600, beta 1 (its count
# crossed 65535 in a document-major visit by sweep 20 with this corpus and
# seed; other corpora of the same shape crossed it word-major).
source "$(dirname "$0")/lib.sh"

command -v python3 >/dev/null || skip "python3 not installed (the corpus's generator)"
python3 - <<'EOF' >"$TMP/corpus.libsvm"
import random
r = random.Random(5)
for d in range(200):
    words = {0: 400}
    for _ in range(100):
        w = 1 + r.randrange(20000)
        words[w] = words.get(w, 0) + 1
    print(d, " ".join("%d:%d" % (w, c) for w, c in sorted(words.items())))
EOF
"$ROTOR" partition --app lda --input "$TMP/corpus.libsvm" --format libsvm --nodes 1 --threads 1 \
    --out "$TMP/plan" >"$TMP/part.log" 2>&1 || { cat "$TMP/part.log"; fail "partition"; }
"$ROTOR" train --plan "$TMP/plan" --app lda --topics 600 --alpha 0.1 --beta 1 --iters 30 \
    --eval-every 5 --serial --seed 1 --out "$TMP/model" >"$TMP/train.log" 2>&1 ||
    { tail -n 5 "$TMP/train.log"; fail "train: a word's count past 16 bits broke the run"; }
lls=$(grep -o 'll/token [^ ]*' "$TMP/train.log" | awk '{ print $2 }')
[ "$(echo "$lls" | wc -l)" -ge 7 ] || fail "train: expected 7 evaluations: $(cat "$TMP/train.log")"
echo "$lls" | awk '{ if (!($1 + 0 < 0 && $1 + 0 > -100)) bad = 1 } END { exit bad }' ||
    fail "train: ll/token not finite: $(echo "$lls" | tr '\n' ' ')"

# the case is hit: word 0's largest count passed 65535 (the model as saved)
python3 - "$TMP/model" <<'EOF' || fail "word 0's counts: the test does not reach 16 bits"
import array, ast, struct, sys
def npy(path):
    b = open(path, "rb").read()
    n = struct.unpack("<H", b[8:10])[0]
    a = array.array("i")
    a.frombytes(b[10 + n:])
    return ast.literal_eval(b[10:10 + n].decode())["shape"], a
(v, k), wt = npy(sys.argv[1] + "/word_topic.part-00000.npy")
_, ids = npy(sys.argv[1] + "/words.part-00000.npy")
row = wt[list(ids).index(0) * k:][:k]
sys.exit(0 if sum(row) == 80000 and max(row) > 65535 else 1)
EOF
