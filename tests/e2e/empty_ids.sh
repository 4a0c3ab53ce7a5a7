#!/usr/bin/env bash
# An empty user id (a CSV row with an empty first field) is an id like any
# other: partition, train, export, recommend and eval keep it.  rotor
# recommend's TSV writer copied the first user's id into a buffer not yet
# allocated: memcpy(NULL, "", 0), undefined behaviour that the sanitizer
# build stopped on (fix30).
source "$(dirname "$0")/lib.sh"
cd "$TMP"
printf 'u,i,r\n,a,5\n,b,1\nx,a,4\nx,c,2\ny,b,3\ny,c,5\n' >r.csv
expect_status 0 "$ROTOR" partition --input r.csv --format csv --nodes 1 --threads 1 --out plan
expect_status 0 "$ROTOR" train --plan plan --app sgd-mf --rank 2 --epochs 2 --serial --out model
[ "$(head -1 model/rows.ids)" = "" ] || fail "the empty id is not the first row id"
expect_status 0 "$ROTOR" export --model model --out single
for m in model single; do
    "$ROTOR" recommend --model $m --top 2 --no-exclude --quiet --out "$m.tsv" ||
        fail "recommend --model $m failed"
    [ "$(grep -c $'^\t' "$m.tsv")" = 2 ] || fail "$m: the empty user lacks its 2 recommendations"
    "$ROTOR" recommend --model $m --top 2 --no-exclude --quiet --json --out "$m.json" ||
        fail "recommend --json --model $m failed"
    grep -q '"user": ""' "$m.json" || fail "$m: the JSON lacks the empty user"
done
cmp model.tsv single.tsv || fail "the exported model recommends otherwise"
"$ROTOR" eval --model single --input r.csv --format csv >eval.txt || fail "eval failed"
grep -q '^ratings 6 ' eval.txt || fail "eval did not score the empty user's ratings: $(cat eval.txt)"
echo "PASS"
