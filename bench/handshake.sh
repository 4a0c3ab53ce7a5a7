#!/usr/bin/env bash
# What authentication costs at start-up (issue 9): the TCP handshake time of
# every outgoing connection (connected -> hello, challenge, proof, verdict
# done), with a job secret and with --insecure (same messages, no MACs),
# in interleaved rounds of an 8-rank job on loopback.  Prints JSON: median
# and max milliseconds per connection for each mode.
#   bench/handshake.sh [ROUNDS] [RANKS]
set -euo pipefail
case ${1:-} in
-h | --help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROTOR=${ROTOR:-$ROOT/build/tools/rotor}
ROUNDS=${1:-5}
RANKS=${2:-8}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
run() { # mode -> appends handshake ms to $TMP/mode.ms
    local mode=$1 extra=()
    [ "$mode" = insecure ] && extra=(--insecure)
    ROTOR_LOG=debug "$ROTOR" launch -n "$RANKS" -- "$ROTOR" bench-link --test allreduce \
        --min-size 8 --max-size 8 --iters 1 "${extra[@]}" 2>&1 |
        grep -o 'handshake with .* took [0-9.]* ms' | awk '{print $(NF-1)}' >>"$TMP/$mode.ms"
}
for _ in $(seq "$ROUNDS"); do run secret; run insecure; done
stats() { sort -g "$TMP/$1.ms" | awk '{a[NR]=$1} END {printf "{\"connections\": %d, \"median_ms\": %.3f, \"max_ms\": %.3f}", NR, a[int((NR+1)/2)], a[NR]}'; }
printf '{"ranks": %d, "rounds": %d, "secret": %s, "insecure": %s, "load": "%s"}\n' \
    "$RANKS" "$ROUNDS" "$(stats secret)" "$(stats insecure)" "$(cut -d' ' -f1-3 /proc/loadavg)"
