#!/bin/bash
# ranking.sh - `rotor eval --top-k` and `rotor recommend` end to end: the training items come from
# the model's plan by default and equal those of the training file given with
# --exclude; a model whose plan is gone is refused with a message naming
# --exclude / --no-exclude.  (The metrics themselves are checked against a
# brute-force reference in tests/apps/ranking_test.c.)
source "$(dirname "$0")/lib.sh"
cd "$TMP"
export ROTOR_LOG=warn
"$ROTOR" gen mf --rows 300 --cols 200 --nnz 9000 --rank 3 --seed 7 --out all.txt
awk 'NR % 5 == 0' all.txt >test.txt
awk 'NR % 5 != 0' all.txt >train.txt
"$ROTOR" partition --input train.txt --test test.txt --nodes 2 --threads 1 --out plan
"$ROTOR" train --plan plan --app sgd-mf --rank 4 --epochs 3 --serial --out model

note "eval --top-k: plan-derived exclusions equal --exclude train.txt"
"$ROTOR" eval --model model --input test.txt --top-k 5 --json >plan.json
"$ROTOR" eval --model model --input test.txt --top-k 5 --json --exclude train.txt >file.json
grep -q '"excluded": "plan"' plan.json || fail "excluded is not plan: $(cat plan.json)"
strip() { sed 's/"excluded": "[^"]*"//' "$1"; }
[ "$(strip plan.json)" = "$(strip file.json)" ] || fail "plan and --exclude differ: $(cat plan.json) / $(cat file.json)"
grep -q '"most_popular": {"precision"' plan.json || fail "no baseline: $(cat plan.json)"

note "the model's plan is found from any working directory"
(cd / && "$ROTOR" eval --model "$TMP/model" --input "$TMP/test.txt" --top-k 5 --json) >other.json
[ "$(strip other.json)" = "$(strip plan.json)" ] || fail "eval from / differs"

note "--no-exclude ranks training items too"
"$ROTOR" eval --model model --input test.txt --top-k 5 --json --no-exclude >none.json
grep -q '"excluded": "none"' none.json || fail "excluded is not none"

note "recommend: exactly K items per user, original ids, none seen in training"
K=7
"$ROTOR" recommend --model model --top $K --out rec.tsv
users=$(cut -f1 train.txt | cut -d' ' -f1 | sort -u | wc -l)
awk '{print $1}' train.txt | sort -u >train_users
[ "$(cut -f1 rec.tsv | sort -u)" = "$(cat train_users)" ] || fail "users differ from training's"
[ "$(wc -l <rec.tsv)" = $((users * K)) ] || fail "$(wc -l <rec.tsv) lines for $users users x $K"
awk -F'\t' -v k=$K '{ n[$1]++; if ($4 != n[$1]) bad = 1 } END { for (u in n) if (n[u] != k) bad = 1; exit bad }' rec.tsv ||
    fail "ranks are not 1..K per user"
awk 'NR == FNR { seen[$1 " " $2] = 1; next } ($1 " " $2) in seen { print; bad = 1 } END { exit bad }' \
    train.txt <(tr '\t' ' ' <rec.tsv) >seen.out || fail "recommended training items: $(head -3 seen.out)"
awk 'NR == FNR { item[$2] = 1; next } !($2 in item) { bad = 1 } END { exit bad }' train.txt rec.tsv ||
    fail "an item id that is not an original id"

note "recommend equals the full ranking cut after training items (1 thread, blocks of 1 user)"
"$ROTOR" recommend --model model --top 200 --no-exclude --threads 1 --batch 1 --out full.tsv
awk -F'\t' -v k=$K 'NR == FNR { split($0, f, " "); seen[f[1] "\t" f[2]] = 1; next }
    !(($1 "\t" $2) in seen) && ++n[$1] <= k { print $1 "\t" $2 "\t" $3 "\t" n[$1] }' train.txt full.tsv >cut.tsv
cmp -s cut.tsv rec.tsv || fail "recommend differs from the cut full ranking: $(diff cut.tsv rec.tsv | head -4)"

note "recommend --users: unknown ids reported and counted, the rest served"
printf '%s\nnobody\n%s\n' "$(head -1 train_users)" "$(tail -1 train_users)" >users.txt
"$ROTOR" recommend --model model --top 3 --users users.txt --json --out u.json 2>u.err
[ "$(wc -l <u.json)" = 2 ] || fail "--users gave $(wc -l <u.json) lines"
grep -q "1 of 3 users are unknown" u.err || fail "unknown user not reported: $(cat u.err)"
grep -q '"items": \["[^"]*", "[^"]*", "[^"]*"\]' u.json || fail "json: $(head -1 u.json)"

note "a model whose plan is gone names --exclude and --no-exclude"
mv plan plan.moved
expect_status 2 "$ROTOR" eval --model model --input test.txt --top-k 5
grep -q -- "--exclude FILE, or --no-exclude" "$TMP/last.err" || fail "message: $(cat "$TMP/last.err")"
expect_status 2 "$ROTOR" recommend --model model --top 5 --out r2.tsv
grep -q -- "--exclude FILE, or --no-exclude" "$TMP/last.err" || fail "message: $(cat "$TMP/last.err")"
[ ! -e r2.tsv ] || fail "a refused recommend left r2.tsv behind"
echo PASS
