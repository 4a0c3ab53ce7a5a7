#!/usr/bin/env bash
# scale.sh - measured against predicted: the real engine over TCP between
# network namespaces joined by shaped veth links, next to `rotor simulate`.
#
#   bench/scale.sh [--quick] [--ranks 2,4,8] [--gbps 1,5,25] [--apps sgd-mf,lda]
#                  [--epochs N] [--keep]
#
# Needs root (ip netns, tc).  Topology: one namespace per rank (rtscale-R,
# address 169.254.77.R+1/24 on its veth) and one holding a bridge
# (rtscale-sw); every rank's veth is shaped with tc tbf in both directions
# (the rank side and the bridge side), like a NIC of that rate on a switch.
# No address outside 169.254.77.0/24 is used and nothing is routed out of
# the namespaces.  netem is not available on every kernel, so no latency is
# added: the link latency the model gets is the one measured between two
# namespaces (rotor bench-link, 8-byte ping-pong).
#
# For each (app, ranks, gbps): gen + partition once per (app, ranks), run
# `rotor train` in every namespace (1 thread per rank), take the median epoch
# time and stall of the epochs after the first, and run `rotor simulate` on
# the same plan with the kernel rate calibrated here (--calibrate-threads:
# the plan's workers as threads of one process, sharing this machine's cores
# as the ranks do) and the bandwidth TCP reaches through the shaped link
# (gbps_tcp, rotor bench-link).  One JSON line per configuration:
#   {"app", "ranks", "threads", "gbps", "gbps_tcp", "latency_us", "measured_epoch_s",
#    "predicted_epoch_s", "epoch_error", "measured_stall", "predicted_stall",
#    "critical", "loadavg"}
# --quick: 4 configurations (about a minute and a half).  Without root or namespaces it
# prints a message and exits 0.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROTOR=${ROTOR:-$ROOT/build/tools/rotor}
ranks=2,4,8 gbps=1,5,25 apps=sgd-mf,lda epochs=6 quick=0 keep=0
while [ $# -gt 0 ]; do
    case $1 in
    --quick) quick=1 ;;
    --ranks) ranks=$2; shift ;;
    --gbps) gbps=$2; shift ;;
    --apps) apps=$2; shift ;;
    --epochs) epochs=$2; shift ;;
    --keep) keep=1 ;;
    -h|--help) sed -n '2,29p' "$0"; exit 0 ;;
    *) echo "scale.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done

PREFIX=rtscale
SUBNET=169.254.77
TMP=$(mktemp -d)
max_ranks=0

skip() { echo "scale.sh: skipped: $*" >&2; rm -rf "$TMP"; exit 0; }

teardown() {
    for ((r = 0; r < max_ranks; r++)); do
        ip netns del "$PREFIX-$r" 2>/dev/null || true
    done
    ip netns del "$PREFIX-sw" 2>/dev/null || true
}

cleanup() {
    local pids
    pids=$(jobs -p)
    [ -n "$pids" ] && kill $pids 2>/dev/null || true
    teardown
    [ "$keep" = 1 ] && echo "scale.sh: kept $TMP" >&2 || rm -rf "$TMP"
}

[ "$(id -u)" = 0 ] || skip "needs root for ip netns and tc"
command -v ip >/dev/null && command -v tc >/dev/null || skip "needs iproute2 (ip, tc)"
[ -x "$ROTOR" ] || { echo "scale.sh: build rotor first ($ROTOR)" >&2; exit 2; }
trap cleanup EXIT

# ---- network ----

# netns_up N: namespaces for ranks 0..N-1 plus the switch, no shaping yet.
netns_up() {
    max_ranks=$1
    ip netns add "$PREFIX-sw" || skip "cannot create network namespaces"
    ip -n "$PREFIX-sw" link add br0 type bridge || skip "cannot create a bridge"
    ip -n "$PREFIX-sw" link set br0 up
    ip -n "$PREFIX-sw" link set lo up
    for ((r = 0; r < $1; r++)); do
        local ns=$PREFIX-$r
        ip netns add "$ns"
        ip -n "$ns" link set lo up
        ip -n "$ns" link add eth0 type veth peer name "p$r" netns "$PREFIX-sw"
        ip -n "$ns" addr add "$SUBNET.$((r + 1))/24" dev eth0
        ip -n "$ns" link set eth0 up
        ip -n "$PREFIX-sw" link set "p$r" master br0
        ip -n "$PREFIX-sw" link set "p$r" up
    done
}

# shape GBPS: tbf on both ends of every rank's link (0 = unshaped).
shape() {
    local rate=$1 burst
    # a burst of ~1 ms of traffic (at least 64 KiB) keeps tbf accurate at high rates
    burst=$(awk -v g="$rate" 'BEGIN { b = g * 1e9 / 8 / 1000; if (b < 262144) b = 262144; printf "%d", b }')
    for ((r = 0; r < max_ranks; r++)); do
        tc -n "$PREFIX-$r" qdisc del dev eth0 root 2>/dev/null || true
        tc -n "$PREFIX-sw" qdisc del dev "p$r" root 2>/dev/null || true
        [ "$rate" = 0 ] && continue
        tc -n "$PREFIX-$r" qdisc add dev eth0 root tbf rate "${rate}gbit" burst "$burst" latency 200ms
        tc -n "$PREFIX-sw" qdisc add dev "p$r" root tbf rate "${rate}gbit" burst "$burst" latency 200ms
    done
}

hostfile() { # hostfile N PORT FILE
    : >"$3"
    for ((r = 0; r < $1; r++)); do echo "$SUBNET.$((r + 1)):$(($2 + r))" >>"$3"; done
}

# Run CMD... in namespaces 0..N-1 as ranks of one job; logs in $TMP/log.R.
port=21000
run_ranks() { # run_ranks N CMD...
    local n=$1; shift
    port=$((port + 16))
    hostfile "$n" "$port" "$TMP/hosts"
    local pids=() rc=0
    for ((r = 0; r < n; r++)); do
        ip netns exec "$PREFIX-$r" "$@" --node "$r" --nodes "$n" --hostfile "$TMP/hosts" \
            >"$TMP/out.$r" 2>"$TMP/log.$r" &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || rc=1; done
    return $rc
}

# bench-link between namespaces 0 and 1; prints rank 0's JSON.
link_bench() { # link_bench ARGS...
    port=$((port + 16))
    hostfile 2 "$port" "$TMP/hosts2"
    ip netns exec "$PREFIX-1" "$ROTOR" bench-link --rank 1 --size 2 --hostfile "$TMP/hosts2" \
        --transport tcp --json "$@" >/dev/null 2>&1 &
    ip netns exec "$PREFIX-0" "$ROTOR" bench-link --rank 0 --size 2 --hostfile "$TMP/hosts2" \
        --transport tcp --json "$@" 2>/dev/null
    wait
}

# One-way latency between two namespaces (8-byte ring pass, microseconds).
measure_latency() {
    link_bench --test lat --min-size 8 --max-size 8 --iters 200 |
        sed -n 's/.*"t_typical_usec": \([0-9.]*\).*/\1/p'
}

# What TCP gets through the shaped link (2 MiB blocks, Gb/s): the link
# model's bandwidth.  tbf plus TCP's congestion control rarely reach the
# nominal rate, and on a 2-core machine the copies bound the fast rates.
measure_gbps() {
    link_bench --test bw --min-size 2M --max-size 2M --iters 20 |
        sed -n 's/.*"bw_mb_per_sec": \([0-9.]*\).*/\1/p' | awk '{ printf "%.3f", $1 * 8 / 1000 }'
}

# ---- data and runs ----

# Workload per app: transfer and compute of the same order at 1-5 Gb/s
# on one core per rank, so the stall moves with the link.
gen_plan() { # gen_plan APP RANKS -> $TMP/APP.RANKS/plan
    local app=$1 n=$2 d=$TMP/$1.$2
    mkdir -p "$d"
    if [ "$app" = lda ]; then
        [ -f "$TMP/corpus.txt" ] || "$ROTOR" gen lda --docs 6000 --vocab 20000 --topics 50 \
            --doc-len 150 --seed 1 --out "$TMP/corpus.txt" >/dev/null 2>&1
        "$ROTOR" partition --app lda --input "$TMP/corpus.txt" --nodes "$n" --threads 1 \
            --seed 1 --out "$d/plan" >/dev/null 2>&1
    else
        [ -f "$TMP/mf.txt" ] || "$ROTOR" gen mf --rows 40000 --cols 40000 --nnz 1500000 \
            --rank 8 --seed 1 --out "$TMP/mf.txt" >/dev/null 2>&1
        "$ROTOR" partition --input "$TMP/mf.txt" --nodes "$n" --threads 1 --seed 1 \
            --out "$d/plan" >/dev/null 2>&1
    fi
}

app_args() { # the app's options (block size and kernel cost)
    if [ "$1" = lda ]; then echo "--topics 100 --iters $epochs --eval-every 1"
    else echo "--rank 64 --epochs $epochs"; fi
}

# median of the epoch times and stalls after the first epoch, from rank 0's log
measured() {
    local f=$TMP/log.0
    if grep -q 'lda iter' "$f"; then
        sed -n 's/.*last sweep \([0-9.]*\)s stall *\([0-9.]*\)%.*/\1 \2/p' "$f"
    else
        sed -n 's/.*epoch *[0-9]* *\([0-9.]*\)s .*stall *\([0-9.]*\)%.*/\1 \2/p' "$f"
    fi | tail -n +2 >"$TMP/epochs"
    [ -s "$TMP/epochs" ] || { echo "nan nan"; return; }
    local t s
    t=$(cut -d' ' -f1 "$TMP/epochs" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
    s=$(cut -d' ' -f2 "$TMP/epochs" | sort -g | awk '{ v[NR] = $1 } END { printf "%.4f", v[int((NR + 1) / 2)] / 100 }')
    echo "$t $s"
}

declare -A rate
# The kernel rate with all of the plan's workers as threads of one process on
# this machine's cores, as the ranks will share them (no network).
calibrate() { # calibrate APP PLAN KEY: rate[KEY] = units/s per thread
    local out
    # shellcheck disable=SC2046
    out=$("$ROTOR" simulate --plan "$2" --app "$1" $(app_args "$1") --calibrate-threads --gbps 0 \
        --json 2>&1) || { echo "$out" >&2; return 1; }
    rate[$3]=$(echo "$out" | sed -n 's/.*"rate": \([0-9.e+]*\).*/\1/p')
}

declare -A effective
one_config() { # one_config APP RANKS GBPS LAT_US
    local app=$1 n=$2 g=$3 lat=$4 plan=$TMP/$1.$2/plan m pred
    shape "$g"
    [ -n "${effective[$g]:-}" ] || effective[$g]=$(measure_gbps)
    # shellcheck disable=SC2046
    if ! run_ranks "$n" "$ROTOR" train --plan "$plan" --app "$app" $(app_args "$app") \
        --transport tcp; then
        echo "scale.sh: $app on $n ranks at $g Gb/s failed:" >&2
        tail -5 "$TMP"/log.* >&2
        return 1
    fi
    m=$(measured)
    # shellcheck disable=SC2046
    pred=$("$ROTOR" simulate --plan "$plan" --app "$app" $(app_args "$app") --json \
        --rate "${rate[$app.$n]}" --gbps "${effective[$g]}" --latency-us "$lat" --overhead-us 10)
    local pe ps crit
    pe=$(echo "$pred" | sed -n 's/.*"predicted_epoch_s": \([0-9.e+-]*\).*/\1/p')
    ps=$(echo "$pred" | sed -n 's/.*"predicted_stall": \([0-9.e+-]*\).*/\1/p')
    crit=$(echo "$pred" | sed -n 's/.*"critical": "\([a-z]*\)".*/\1/p')
    set -- $m
    printf '{"app": "%s", "ranks": %d, "threads": 1, "gbps": %s, "gbps_tcp": %s, ' \
        "$app" "$n" "$g" "${effective[$g]}"
    printf '"latency_us": %s, ' "$lat"
    printf '"measured_epoch_s": %s, "predicted_epoch_s": %s, "epoch_error": %s, ' "$1" "$pe" \
        "$(awk -v m="$1" -v p="$pe" 'BEGIN { printf "%.3f", (p - m) / m }')"
    printf '"measured_stall": %s, "predicted_stall": %s, "critical": "%s", "loadavg": "%s"}\n' \
        "$2" "$ps" "$crit" "$(cut -d' ' -f1-3 /proc/loadavg)"
}

# ---- main ----

if [ "$quick" = 1 ]; then
    configs="sgd-mf:2:1 sgd-mf:4:1 lda:2:1 lda:4:5"
else
    configs=""
    for a in ${apps//,/ }; do
        for n in ${ranks//,/ }; do
            for g in ${gbps//,/ }; do configs="$configs $a:$n:$g"; done
        done
    done
fi
need=0
for c in $configs; do
    IFS=: read -r a n g <<<"$c"
    [ "$n" -gt "$need" ] && need=$n
done
teardown
netns_up "$need"
shape 0
lat=$(measure_latency)
[ -n "$lat" ] || lat=30
for c in $configs; do
    IFS=: read -r a n g <<<"$c"
    [ -d "$TMP/$a.$n/plan" ] || gen_plan "$a" "$n"
    calibrate "$a" "$TMP/$a.$n/plan" "$a.$n" # right before, under the same load
    one_config "$a" "$n" "$g" "$lat" || true
done
