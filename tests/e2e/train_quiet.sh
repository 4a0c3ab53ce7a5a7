#!/usr/bin/env bash
# rotor train -q (--quiet): no per-epoch lines, progress or notes on stderr,
# as partition's -q; warnings and errors stay, the --metrics file still gets
# every epoch, and the model is the same bits as without it (train had no
# -q: a scripted run's only way to silence it was ROTOR_LOG=warn).
source "$(dirname "$0")/lib.sh"
small_plans
args=(--plan "$TMP/mfplan" --app sgd-mf --rank 4 --epochs 3 --seed 3)
"$ROTOR" train "${args[@]}" --serial --out "$TMP/loud" --metrics "$TMP/loud.json" \
    2>"$TMP/loud.err" || fail "train: $(cat "$TMP/loud.err")"
grep -q "epoch   3" "$TMP/loud.err" || fail "train without -q: no epoch line"
"$ROTOR" train "${args[@]}" --serial --out "$TMP/quiet" --metrics "$TMP/quiet.json" -q \
    2>"$TMP/quiet.err" || fail "train -q: $(cat "$TMP/quiet.err")"
[ ! -s "$TMP/quiet.err" ] || fail "train -q wrote to stderr: $(head -3 "$TMP/quiet.err")"
for f in "$TMP"/loud/*.npy; do
    cmp -s "$f" "$TMP/quiet/$(basename "$f")" || fail "train -q: $(basename "$f") differs"
done
[ "$(grep -o '"epoch"' "$TMP/quiet.json" | wc -l)" = 3 ] || fail "train -q: the metrics file lacks epochs"
# two ranks under launch: each rank quiet
"$ROTOR" launch -n 2 -- "$ROTOR" train "${args[@]}" --out "$TMP/quiet2" --quiet \
    >"$TMP/quiet2.out" 2>"$TMP/quiet2.err" || fail "launch train --quiet: $(cat "$TMP/quiet2.err")"
! grep -q "epoch" "$TMP/quiet2.err" || fail "launch train --quiet: epoch lines: $(head -3 "$TMP/quiet2.err")"
# an error still shows
expect_status 2 "$ROTOR" train "${args[@]}" --serial -q --checkpoint-every 2
grep -q "rotor: error: --checkpoint-every needs --checkpoint" "$TMP/last.err" ||
    fail "train -q: the error is missing: $(cat "$TMP/last.err")"
echo "PASS"
