#!/usr/bin/env bash
# collectives.sh - all-reduce latency against the rank count, star vs tree.
#
#   bench/collectives.sh [--ranks 2,4,8,16] [--sizes 8,8192,65536] [--rounds 3]
#                        [--iters 100]
#
# For every rank count P, local processes (rotor launch -n P, TCP over
# loopback) time back-to-back int64 all-reduces of each size with the old
# star through rank 0 (--collectives star) and the tree collectives (the
# default).  Rounds interleave the two algorithms; each figure is the median
# over rounds of `rotor bench-link --test allreduce`'s typical time.  Prints
# one JSON line per (ranks, bytes):
#   {"benchmark": "allreduce", "ranks": P, "bytes": B, "star_usec": S,
#    "tree_usec": T, "star_over_tree": S/T, "rounds": R, "loadavg": "..."}
# On a machine with fewer cores than ranks every process competes for the
# CPU, so these figures measure scheduling as much as the network; the
# tree's advantage (log2 P rounds instead of P - 1 messages through one rank)
# shows where every rank has its own core and link.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
ranks=2,4,8,16 sizes=8,8192,65536 rounds=3 iters=100
bench_options 2,18 "$@"
bench_start

# one P ALGO SIZE ROUND: appends "SIZE USEC" to $TMP/P.ALGO.SIZE
one() {
    local out
    out=$("$ROTOR" launch -n "$1" -- "$ROTOR" bench-link --test allreduce --json \
        --collectives "$2" --min-size "$3" --max-size "$3" --iters "$iters" 2>/dev/null)
    echo "$out" | sed -n 's/.*"t_typical_usec": \([0-9.]*\).*/\1/p' >>"$TMP/$1.$2.$3"
}

for ((r = 1; r <= rounds; r++)); do
    for p in ${ranks//,/ }; do
        for s in ${sizes//,/ }; do
            if ((r % 2)); then one "$p" star "$s"; one "$p" tree "$s"
            else one "$p" tree "$s"; one "$p" star "$s"; fi
        done
    done
done
for p in ${ranks//,/ }; do
    for s in ${sizes//,/ }; do
        st=$(median <"$TMP/$p.star.$s") tr=$(median <"$TMP/$p.tree.$s")
        printf '{"benchmark": "allreduce", "ranks": %d, "bytes": %d, "star_usec": %s, ' "$p" "$s" "$st"
        printf '"tree_usec": %s, "star_over_tree": %s, "rounds": %d, "loadavg": "%s"}\n' \
            "$tr" "$(awk -v a="$st" -v b="$tr" 'BEGIN {printf "%.2f", a / b}')" "$rounds" \
            "$(cut -d' ' -f1-3 /proc/loadavg)"
    done
done
