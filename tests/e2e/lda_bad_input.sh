#!/usr/bin/env bash
# Bad LDA input: each case exits 2 with ONE line "rotor: error: FILE:LINE: ..."
# and leaves no output directory behind.
source "$(dirname "$0")/lib.sh"

# bad NAME EXPECTED-MESSAGE-REGEX PARTITION-ARGS...
bad() {
    local name=$1 want=$2; shift 2
    expect_status 2 "$ROTOR" partition --app lda --nodes 1 --threads 2 --out "$TMP/out-$name" "$@"
    [ "$(wc -l <"$TMP/last.err")" = 1 ] || { cat "$TMP/last.err" >&2; fail "$name: expected one line"; }
    grep -Eq "^rotor: error: $want" "$TMP/last.err" || { cat "$TMP/last.err" >&2; fail "$name: message"; }
    [ ! -e "$TMP/out-$name" ] || fail "$name: left an output directory"
    note "$name: $(cat "$TMP/last.err")"
}
w() { printf "$2" >"$TMP/$1"; echo "$TMP/$1"; }

vocab3=$(w vocab.txt 'a\nb\nc\n')
bad word-range ".*/docword.1.txt:5: word id 4 outside the vocabulary" \
    --input "$(w docword.1.txt '2\n3\n2\n1 1 1\n2 4 1\n')"
bad zero-count ".*/docword.2.txt:4: count 0 must be an integer from 1 to 4294967295" \
    --input "$(w docword.2.txt '2\n3\n2\n1 1 0\n2 2 1\n')"
bad negative-count ".*/docword.3.txt:5: count -2 is negative: want an integer from 1 to 4294967295" \
    --input "$(w docword.3.txt '2\n3\n2\n1 1 1\n2 2 -2\n')"
bad header-nnz ".*/docword.4.txt:5: file ends after 2 triples, header NNZ=5" \
    --input "$(w docword.4.txt '2\n3\n5\n1 1 1\n2 2 1\n')"
bad header-docs ".*/docword.5.txt:4: document id 7 outside 1..2" \
    --input "$(w docword.5.txt '2\n3\n1\n7 1 1\n')"
bad vocab-length ".*/vocab.txt:4: vocabulary has 3 words, .*header W=4" \
    --input "$(w docword.6.txt '2\n4\n1\n1 1 1\n')" --vocab "$vocab3"
bad ldac-pairs ".*/ap.dat:2: line says 3 pairs but has 1" \
    --input "$(w ap.dat '1 0:2\n3 1:1\n')" --vocab "$vocab3" --format ldac
bad ldac-range ".*/ap2.dat:1: word id 3 outside the vocabulary" \
    --input "$(w ap2.dat '1 3:2\n')" --vocab "$vocab3" --format ldac
bad libsvm-count ".*/s.svm:2: count in 'y:0' must be an integer from 1 to 4294967295" \
    --input "$(w s.svm 'd1 x:1\nd2 y:0\n')"
bad missing-file ".*/nope.txt: cannot open" --input "$TMP/nope.txt"
bad no-nodes "--nodes: 0 is out of range 1..1048576" --input "$vocab3" --nodes 0
bad no-input "partition: --input, --out, --nodes and --threads are required"

# Empty documents are kept and counted, not fatal.
"$ROTOR" partition --app lda --nodes 1 --threads 2 --out "$TMP/plan" \
    --input "$(w docword.ok.txt '3\n3\n2\n1 1 2\n3 2 1\n')" >"$TMP/ok.out" 2>"$TMP/ok.err" ||
    { cat "$TMP/ok.err"; fail "a corpus with an empty document was refused"; }
grep -q "3 documents (1 empty" "$TMP/ok.err" || { cat "$TMP/ok.err"; fail "empty document not counted"; }

# Bad training options.
expect_status 2 "$ROTOR" train --app lda --plan "$TMP/plan" --topics 1
grep -q "^rotor: error: --topics: 1 is out of range 2..65535" "$TMP/last.err" || fail "--topics 1"
expect_status 2 "$ROTOR" train --app lda --plan "$TMP/plan" --sampler gibbs
grep -q "^rotor: error: --sampler: 'gibbs' is not one of auto, sparse, mh" "$TMP/last.err" || fail "--sampler"
expect_status 2 "$ROTOR" train --app lda --plan "$TMP/plan" --alpha -1
grep -q "^rotor: error: --alpha: -1 is out of range (0, 1e+30]" "$TMP/last.err" || fail "--alpha"
# An unusable --out fails before training starts (/proc: not writable even for root).
expect_status 2 "$ROTOR" train --app lda --plan "$TMP/plan" --iters 1 --out /proc/rotor-nope
grep -q "^rotor: error: /proc/rotor-nope: --out: cannot create files in /proc" "$TMP/last.err" || fail "--out /proc/rotor-nope"
grep -q "lda iter" "$TMP/last.err" && fail "--out /proc/rotor-nope: training started"
# The plan's side files are inside it and covered by plan.json's checksums.
grep -q '"lda.words"' "$TMP/plan/plan.json" || fail "lda.words not in plan.json files"
grep -q '"vocab.txt"' "$TMP/plan/plan.json" || fail "vocab.txt not in plan.json files"
ls -a "$TMP" | grep -q "plan.tmp-" && fail "a temporary plan directory was left behind"
rm "$TMP/plan/lda.words"
expect_status 2 "$ROTOR" train --app lda --plan "$TMP/plan"
grep -q "lda.words: cannot open" "$TMP/last.err" || fail "missing lda.words"
expect_status 2 "$ROTOR" gen lda --docs 10 --vocab 5 --topics 1 --doc-len 3 --out "$TMP/g.txt"
expect_status 2 "$ROTOR" topics --model "$TMP/nothing"
# Latin-1 raw text read as UTF-8 loses its accented letters ("caf\xe9" became
# "caf"): it runs, with one warning naming the file, the count and where.
printf 'coffee dessert\ncaf\xe9 cr\xe8me br\xfbl\xe9e\n' >"$TMP/latin1.txt"
expect_status 0 "$ROTOR" partition --app lda --input "$TMP/latin1.txt" --format text --nodes 1 \
    --threads 1 --out "$TMP/lat"
grep -q "latin1.txt: 4 bytes that are not UTF-8 (the first in document 2).*iconv" "$TMP/last.err" ||
    fail "Latin-1 text: no warning: $(cat "$TMP/last.err")"
printf 'coffee dessert\ncaf\xc3\xa9 cr\xc3\xa8me\n' >"$TMP/utf8.txt"
expect_status 0 "$ROTOR" partition --app lda --input "$TMP/utf8.txt" --format text --nodes 1 \
    --threads 1 --out "$TMP/u8"
grep -q "not UTF-8" "$TMP/last.err" && fail "UTF-8 text warned about"
# A (document, word) pair on two lines of a UCI file is summed (bag of words),
# with one warning giving the count and the first document (it was silent);
# raw text repeats words by nature and is not warned about.
printf '2\n3\n4\n1 1 2\n2 3 1\n2 3 4\n1 1 1\n' >"$TMP/docword.rep.txt"
expect_status 0 "$ROTOR" partition --app lda --input "$TMP/docword.rep.txt" --format uci --nodes 1 \
    --threads 1 --out "$TMP/rep" -q
grep -q "docword.rep.txt: 2 repeated (document, word) pairs summed into one count (first in document 1)" \
    "$TMP/last.err" || fail "repeated pairs: no warning: $(cat "$TMP/last.err")"
[ "$(grep -c repeated "$TMP/last.err")" = 1 ] || fail "repeated pairs: not one warning"
printf 'tea tea tea cake\nbread bread\n' >"$TMP/rep.txt"
expect_status 0 "$ROTOR" partition --app lda --input "$TMP/rep.txt" --format text --nodes 1 \
    --threads 1 --out "$TMP/rept" -q
grep -q "repeated" "$TMP/last.err" && fail "raw text warned about repeated words"
echo "PASS"
