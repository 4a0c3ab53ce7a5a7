#!/bin/bash
# make_corpus.sh ROTOR - regenerate the committed seed corpora (corpus/NAME/)
# from small generated data: a few valid files of every format plus the
# plan files of a tiny generated plan.  Run from anywhere:
#   tests/fuzz/make_corpus.sh build/tools/rotor
set -euo pipefail
ROTOR=$(realpath "$1")
FUZZ_BIN=$(dirname "$ROTOR")/../tests/fuzz # the replay builds of the targets
HERE=$(cd "$(dirname "$0")" && pwd)
C=$HERE/corpus
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T"
export ROTOR_LOG=error
rm -rf "$C" && mkdir -p "$C"
seed() { mkdir -p "$C/$1" && cp "$2" "$C/$1/$3"; }

"$ROTOR" gen mf --rows 12 --cols 9 --nnz 40 --rank 2 --seed 3 --out r.txt
head -c 600 r.txt >r-small.txt
seed ratings_triplets r-small.txt planted.txt
printf '1\t1\t5\t881250949\n1\t2\t3.5\t881250950\n2\t1\t1\t881250951\n' >tabs.txt
seed ratings_triplets tabs.txt tabs-timestamps.txt
printf 'userId,movieId,rating,timestamp\n1,31,2.5,1260759144\n1,1029,3.0,1260759179\n7,31,4,1\n' >h.csv
seed ratings_csv h.csv header.csv
printf 'u1,i1,1\nu2,i1,2.5\nu1,i3,-1e2\n' >n.csv
seed ratings_csv n.csv noheader.csv
printf '1::1193::5::978300760\n1::661::3::978302109\n2::1193::4::978298413\n' >r.dat
seed ratings_dat r.dat ratings.dat
printf '%%%%MatrixMarket matrix coordinate real general\n%% comment\n3 4 4\n1 1 1.5\n2 3 2\n3 4 -1\n1 4 0.25\n' >m.mtx
seed ratings_mm m.mtx small.mtx
printf '%%%%MatrixMarket matrix coordinate integer general\n2 2 2\n1 1 1\n2 2 2\n' >i.mtx
seed ratings_mm i.mtx integer.mtx
printf '0 0 4\n0 3 2.5\n5 1 1\n2 2 3\n' >r.libmf
seed ratings_libmf r.libmf small.libmf
printf '1:\n1488844,3,2005-09-06\n822109,5,2005-05-13\n2:\r\n1488844,4.5\r\n' >nf.txt
seed ratings_netflix nf.txt combined_data.txt
for f in r-small.txt h.csv r.dat m.mtx nf.txt; do seed ratings_auto "$f" "$f"; done
tr '\n' '\r' <r-small.txt >mac.txt # old Mac line ends: a lone CR ends each line
seed ratings_auto mac.txt mac.txt
printf '{"user_id": "a", "item_id": "b", "rating": 5}\n' >j.json # refused: JSON lines
seed ratings_auto j.json json-lines.json
printf '\xff\xfe1\x00 \x001\x00 \x005\x00\n\x00' >u16.txt # refused: UTF-16 text
seed ratings_auto u16.txt utf16.txt

"$ROTOR" gen lda --docs 6 --vocab 12 --topics 2 --doc-len 6 --seed 2 --out docword.g.txt
{ cat docword.g.txt; printf '====\n'; cat docword.g.txt.vocab.txt; } >uci-vocab
seed corpus_uci docword.g.txt docword.txt
seed corpus_uci uci-vocab docword-vocab.txt
printf 'd1 d1 apple pie apple\nd2 d2 pie crust\nd3 d3\n' >lines.txt
seed corpus_lines lines.txt strings.txt
printf '1 1 3 5 3 9\n2 2 5 5\n' >lines-int.txt
seed corpus_lines lines-int.txt ints.txt
printf 'd1 apple:2 pie:1\nd2 crust:3\nd3\n' >s.libsvm
seed corpus_libsvm s.libsvm strings.libsvm
printf 'd1 0:2 2:1\nd2 1:3\n====\napple\npie\ncrust\n' >v.libsvm
seed corpus_libsvm v.libsvm vocab.libsvm
printf '2 0:2 2:1\n1 1:3\n0\n====\napple\npie\ncrust\n' >c.ldac
seed corpus_ldac c.ldac small.ldac
printf 'The cat sat on the mat.\nDogs and cats, living together!\n\nA third line of TEXT text.\n' >t.txt
seed corpus_text t.txt text.txt
printf 'red green blue\ngreen green\n====\nred\n' >s.txt
seed corpus_text s.txt stopwords.txt
for f in docword.g.txt lines.txt s.libsvm c.ldac t.txt; do seed corpus_auto "$f" "$f"; done
tr '\n' '\r' <docword.g.txt >mac-docword.txt
seed corpus_auto mac-docword.txt mac-docword.txt
printf '{"id": 1, "text": "cats and dogs"}\n' >j.jsonl # refused: JSON lines
seed corpus_auto j.jsonl json-lines.json
printf '# hand-made\n2 0:2 2:1\n// two\n1 1:3\n' >cm.ldac # comment lines, skipped
seed corpus_auto cm.ldac comments.ldac

# Plan files of a tiny MF plan and an LDA plan.
"$ROTOR" partition --input r.txt --nodes 2 --threads 1 --test-fraction 0.2 --out mf
"$ROTOR" partition --app lda --input docword.g.txt --nodes 2 --threads 1 --test-fraction 0.3 --out lda
seed plan_json lda/plan.json lda-plan.json
seed layout lda/layout.bin lda-layout.bin
seed shard lda/shard-00000.bin lda-shard0.bin
# The plan targets fuzz next to their own seed plan (fuzz_seed_plan): its
# files are the seeds that get past the plan id and size checks.
: >empty
FUZZ_KEEP_DIR=$T/seedplan "$FUZZ_BIN/fuzz_plan_json" empty >/dev/null
seed plan_json seedplan/plan/plan.json seed-plan.json
seed layout seedplan/plan/layout.bin seed-layout.bin
seed shard seedplan/plan/shard-00000.bin seed-shard0.bin
byte() { printf "$(printf '\\x%02x' "$1")"; }
for w in rows cols; do
    n=$(wc -l <mf/$w.ids)
    { byte $(( (n << 1 | 1) % 256 )); cat mf/$w.ids; } >ids-$w
    seed ids ids-$w mf-$w.ids
done
{ byte 0; cat mf/rows.ids; } >ids-test
seed ids ids-test test_rows.ids
seed lda_words lda/lda.words lda.words
"$ROTOR" train --plan mf --app sgd-mf --rank 3 --epochs 1 --serial --out model >/dev/null
# (a saved model is per-rank parts now; the export has the single .npy files)
"$ROTOR" export --model model --out single >/dev/null
seed npy single/W.npy W.npy
seed npy single/H.npy H.npy
seed model_json model/model.json sgd-model.json
# mu just past FLT_MAX: the float conversion mf_model.c must not reach (fix29 F3)
sed 's/"mu": [0-9.e-]*/"mu": 3.4028235e38/' model/model.json >mu-past-float.json
seed model_json mu-past-float.json sgd-model-mu-past-float.json
"$ROTOR" train --plan mf --app sgd-mf --rank 2 --epochs 1 --serial --checkpoint ck \
    --checkpoint-every 1 >/dev/null
"$ROTOR" train --plan lda --app lda --topics 2 --iters 1 --serial --checkpoint lck \
    --checkpoint-every 1 --out lmodel >/dev/null
seed model_json lmodel/model.json lda-model.json
for c in ck lck; do
    d=$(ls -d $c/ckpt-* | tail -1)
    seed state "$d/state-00000.bin" "$c-state.bin"
    { printf '\x01'; cat "$d/manifest.json"; } >"$c-manifest"
    seed ckpt_manifest "$c-manifest" "$c-manifest.json"
done
printf '\x02127.0.0.1:18515\n127.0.0.1 18516\n' >hf1
printf '\x0b# two ranks, base port\nlocalhost\n\n127.0.0.1   # second\n' >hf2
printf '\x01[::1]:4000\n' >hf3
seed hostfile hf1 ports
seed hostfile hf2 base-port
seed hostfile hf3 ipv6

printf 'rotor-e2e-test-secret\n' >t1
printf 'c2VjcmV0IG9mIHRoaXJ0eS10d28gYnl0ZXMhIQ==\r\n\r\n' >t2
printf 'two\nlines\n' >t3
printf 'raw\0\x01\xff bytes' >t4
printf '\xef\xbb\xbfsecret\r\n' >t5
seed token_file t1 one-line
seed token_file t2 base64-crlf
seed token_file t3 two-lines
seed token_file t4 binary
seed token_file t5 bom-crlf
du -sh "$C"
