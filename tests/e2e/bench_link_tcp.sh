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

# A listen port in use for a moment (as the source port of a short-lived
# connection can be) is tried again for up to 2 s; one that stays in use
# fails that rank with a message naming the port and the way out.
command -v python3 >/dev/null || skip "python3 not installed (port holder)"
hold() { # PORT SECONDS: listen on 127.0.0.1:PORT for SECONDS, "held" in $TMP/held once it does
    rm -f "$TMP/held"
    python3 -c 'import socket,sys,time
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1)
open(sys.argv[3], "w").write("held"); time.sleep(float(sys.argv[2]))' "$1" "$2" "$TMP/held" \
        2>/dev/null &
    local holder=$!
    while [ ! -s "$TMP/held" ]; do
        kill -0 "$holder" 2>/dev/null || return 1 # the port was taken already
        sleep 0.05
    done
}
allreduce=(bench-link --test allreduce --min-size 8 --max-size 8 --iters 1)
base=$(free_port)
until hold $((base + 1)) 0.7; do base=$(free_port); done
"$ROTOR" launch -n 2 --base-port "$base" -- "$ROTOR" "${allreduce[@]}" >"$TMP/brief" 2>&1 ||
    { cat "$TMP/brief" >&2; fail "a port in use for 0.7 s: the rank did not wait for it"; }
wait
hold $((base + 1)) 8 || fail "port $((base + 1)) taken between the two runs"
got=0
"$ROTOR" launch -n 2 --base-port "$base" -- "$ROTOR" "${allreduce[@]}" >"$TMP/taken" 2>&1 || got=$?
wait
[ "$got" != 0 ] || fail "a port in use throughout: the job did not fail"
grep -q "cannot listen on rank 1 (127.0.0.1:$((base + 1))): the port has been in use" "$TMP/taken" ||
    fail "no message naming the port: $(cat "$TMP/taken")"
echo PASS
