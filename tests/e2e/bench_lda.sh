#!/usr/bin/env bash
# bench/lda.sh --keep DIR run twice in the same DIR: the second run makes
# the plan again instead of stopping at partition's "already exists" (it
# did), and both print the same log-likelihood points (same chain).  A
# 200-document corpus given as KOS, K = 20, 4 iterations, rotor only:
# WarpLDA's format files, removed and made again like the plan, are not
# covered here (WarpLDA is not built by the tests; its format truncates
# what it writes anyway, and two runs over one prefix give the same files).
source "$(dirname "$0")/lib.sh"
: "${ROTOR_SRC:?ROTOR_SRC must point at the source tree}"
command -v python3 >/dev/null || skip "no python3: bench/lda.sh not checked"
[ -x /usr/bin/time ] || skip "no GNU time: bench/lda.sh cannot run"
command -v cc >/dev/null || skip "no cc: bench/lda.sh builds lda_ll.c"
tiny_kos "$TMP/data"
for i in 1 2; do
    ROTOR_DATA_DIR=$TMP/data "$ROTOR_SRC/bench/lda.sh" --corpora kos --topics 20 --iters 4 --ll-iters 2,4 \
        --rounds 1 --samplers auto --no-warplda --keep "$TMP/keep" >"$TMP/run$i.json" 2>"$TMP/run$i.err" ||
        { tail -n 3 "$TMP/run$i.err" >&2; fail "lda.sh --keep, run $i"; }
done
lls() { python3 -c 'import json, sys
for t in json.load(open(sys.argv[1]))["results"][0]["tools"].values():
    print(" ".join(str(p["ll_per_token"]) for p in t["ll_curve"]))' "$1"; }
[ -n "$(lls "$TMP/run1.json")" ] && [ "$(lls "$TMP/run1.json")" = "$(lls "$TMP/run2.json")" ] ||
    fail "LL points: $(lls "$TMP/run1.json") vs $(lls "$TMP/run2.json")"
echo PASS
