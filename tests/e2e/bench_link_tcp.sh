#!/usr/bin/env bash
# rotor bench-link over tcp on the host prints the latency and bandwidth
# tables (perftest-style) and valid JSON with --json.
source "$(dirname "$0")/lib.sh"

"$ROTOR" launch -n 2 -- "$ROTOR" bench-link --transport tcp --max-size 65536 --iters 5 \
    >"$TMP/table" 2>"$TMP/err" || { cat "$TMP/err" >&2; fail "bench-link failed"; }
grep -q 't_typical\[usec\]' "$TMP/table" || fail "no latency table"
grep -q 'BW average\[MB/sec\]' "$TMP/table" || fail "no bandwidth table"
grep -q 'transport: tcp' "$TMP/table" || fail "transport not reported"
# One latency and one bandwidth row per size 4 KiB .. 64 KiB.
[ "$(grep -cE '^\[0\] +65536 ' "$TMP/table")" -eq 2 ] || fail "missing 64 KiB rows"
"$ROTOR" launch -n 2 -- "$ROTOR" bench-link --transport tcp --max-size 65536 --iters 5 --json \
    >"$TMP/json" 2>/dev/null
grep -q '"transport": *"tcp"' "$TMP/json" || fail "--json output: $(cat "$TMP/json")"
echo PASS
