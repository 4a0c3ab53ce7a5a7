#!/bin/bash
# ranking.sh - `rotor eval --top-k` end to end: the training items come from
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

note "a model whose plan is gone names --exclude and --no-exclude"
mv plan plan.moved
expect_status 2 "$ROTOR" eval --model model --input test.txt --top-k 5
grep -q -- "--exclude FILE, or --no-exclude" "$TMP/last.err" || fail "message: $(cat "$TMP/last.err")"
echo PASS
