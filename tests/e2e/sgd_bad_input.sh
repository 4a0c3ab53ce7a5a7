#!/usr/bin/env bash
# Bad launches and options: one clear line, exit status 2.
source "$(dirname "$0")/lib.sh"

"$ROTOR" gen mf --rows 300 --cols 100 --nnz 3000 --rank 2 --noise 0.1 --seed 1 --out "$TMP/r.txt"
"$ROTOR" partition --input "$TMP/r.txt" --nodes 2 --threads 2 --out "$TMP/plan"

# A plan whose worker count does not match the launch (4 workers, 1 x 3 here).
expect_status 2 "$ROTOR" train --plan "$TMP/plan" --threads 3
grep -q 'plan is for 4 workers' "$TMP/last.err" || fail "mismatch message: $(cat "$TMP/last.err")"
[ "$(wc -l <"$TMP/last.err")" -eq 1 ] || fail "expected one line: $(cat "$TMP/last.err")"

expect_status 2 "$ROTOR" train --plan "$TMP/plan" --threads 4 --rank 0
grep -q -- '--rank' "$TMP/last.err" || fail "--rank 0 message"
expect_status 2 "$ROTOR" train --plan "$TMP/plan" --threads 4 --lr -1
expect_status 2 "$ROTOR" train --plan "$TMP/plan" --threads 4 --bogus 1
grep -q 'unknown option --bogus' "$TMP/last.err" || fail "unknown option message"
expect_status 2 "$ROTOR" train --plan "$TMP/nonexistent"
expect_status 2 "$ROTOR" train --threads 4
expect_status 2 "$ROTOR" train --plan "$TMP/plan" --app nope
# An unusable --out fails before training, not after it.
expect_status 2 "$ROTOR" train --plan "$TMP/plan" --threads 4 --out /proc/rotor-nope
grep -q '/proc/rotor-nope' "$TMP/last.err" || fail "--out message: $(cat "$TMP/last.err")"
! grep -q 'epoch ' "$TMP/last.err" || fail "trained before checking --out"
expect_status 0 "$ROTOR" train --help
grep -q -- '--plan' "$TMP/last.out" || fail "train --help"
for cmd in gen partition launch; do
    expect_status 0 "$ROTOR" "$cmd" --help
done
echo PASS
