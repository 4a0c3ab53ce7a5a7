#!/bin/bash
# Balancing quality on a power-law input: the greedy plan's grid-cell and
# row-block imbalance beat a seeded random assignment (the STRADS/DSGD way).
source "$(dirname "$0")/../e2e/lib.sh"
cd "$TMP"
export ROTOR_LOG=warn
# imb PLAN KEY: KEY of the plan's own "imbalance" (the first one in plan.json).
imb() { grep -m1 -A3 '"imbalance":' "$1/plan.json" | grep "\"$2\":" | tr -dc '0-9.'; }

"$ROTOR" gen mf --rows 6000 --cols 3000 --nnz 200000 --rank 4 --powerlaw 1.1 --seed 11 \
    --out pl.txt || fail "gen"
"$ROTOR" partition --input pl.txt --nodes 4 --threads 2 --out greedy || fail "greedy"
"$ROTOR" partition --input pl.txt --nodes 4 --threads 2 --balance random --out random || fail "random"
"$ROTOR" partition --verify greedy >/dev/null && "$ROTOR" partition --verify random >/dev/null ||
    fail "verify"
for k in row_blocks col_blocks cells; do
    g=$(imb greedy $k) r=$(imb random $k)
    echo "$k: greedy $g, random $r"
    awk -v g="$g" -v r="$r" 'BEGIN {exit !(g < r && g >= 1)}' || fail "greedy $k $g not better than random $r"
done
# greedy cells within 10% of perfect on this input
awk -v g="$(imb greedy cells)" 'BEGIN {exit !(g < 1.10)}' || fail "greedy cell imbalance too high"
echo "all ok"
