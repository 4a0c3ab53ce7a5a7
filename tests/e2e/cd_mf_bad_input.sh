#!/usr/bin/env bash
# cd-mf rejects bad hyperparameters and a plan made for another app with one
# clear line and exit status 2, before training anything.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/cd_mf_lib.sh"

printf '1 1 5\n1 2 3\n2 1 4\n2 2 1\n3 1 2\n3 2 5\n' >"$TMP/r.txt"
"$ROTOR" partition --input "$TMP/r.txt" --nodes 1 --threads 1 --out "$TMP/mf" 2>/dev/null ||
    fail "cannot partition a tiny ratings file"
printf 'apple pear apple fig\npear fig fig plum\nplum apple pear pear\n' >"$TMP/docs.txt"
"$ROTOR" partition --app lda --format text --input "$TMP/docs.txt" --nodes 1 --threads 1 \
    --out "$TMP/lda" >/dev/null 2>&1 || fail "cannot partition a tiny corpus for lda"

# check WHAT-IN-MESSAGE ARGS...: exit 2, exactly one line on stderr naming WHAT.
check() {
    local what=$1; shift
    expect_status 2 "$ROTOR" train --app cd-mf "$@"
    [ "$(wc -l <"$TMP/last.err")" = 1 ] || { cat "$TMP/last.err" >&2; fail "not one line: $*"; }
    grep -q -- "$what" "$TMP/last.err" || { cat "$TMP/last.err" >&2; fail "no '$what' in: $*"; }
    [ ! -e "$TMP/out" ] || fail "a model was written for: $*"
}
ok=(--plan "$TMP/mf" --rank 2 --outer 1 --inner 1 --lambda 0.1 --out "$TMP/out")
check '--rank' "${ok[@]}" --rank 0
check '--rank' "${ok[@]}" --rank -3
check '--lambda' "${ok[@]}" --lambda -1
check '--lambda' "${ok[@]}" --lambda=-0.5
check '--inner' "${ok[@]}" --inner 0
check '--outer' "${ok[@]}" --outer 0
check '--inner' "${ok[@]}" --inner two
check '--frobnicate' "${ok[@]}" --frobnicate 1
check 'lda' --plan "$TMP/lda" --rank 2 --outer 1 --inner 1 --lambda 0.1 --out "$TMP/out"
# ... while the same options with good values train.
"$ROTOR" train --app cd-mf "${ok[@]}" 2>"$TMP/good.log" || { cat "$TMP/good.log" >&2; fail "good run failed"; }
[ -s "$TMP/out/W.part-00000.npy" ] || fail "good run wrote no model"
echo PASS
