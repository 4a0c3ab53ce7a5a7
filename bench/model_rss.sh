#!/usr/bin/env bash
# model_rss.sh - memory of saving a model bigger on H than on W: each rank's
# peak RSS (/usr/bin/time %M) against its own share of the model (the bytes
# of the part files it wrote), for a 2-rank SGD-MF job, with --out and
# without (the difference is what saving costs), and the peak RSS of
# `rotor export` merging the model with --memory MB of buffers.  With
# ROTOR_OLD=path/to/an/older/rotor (one that gathered the model on rank 0)
# the same job is measured with it too.  Prints JSON on stdout.
#
#   bench/model_rss.sh [--rows N] [--cols N] [--rank K] [--threads T] [--pipeline C]
#                      [--memory MB] [--rotor PATH]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROTOR=${ROTOR:-$ROOT/build/tools/rotor}
rows=4000 cols=16000 k=512 threads=2 pipeline=2 memory=16
while [ $# -gt 0 ]; do
    case $1 in
    --rows) rows=$2; shift 2 ;;
    --cols) cols=$2; shift 2 ;;
    --rank) k=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --pipeline) pipeline=$2; shift 2 ;;
    --memory) memory=$2; shift 2 ;;
    --rotor) ROTOR=$2; shift 2 ;;
    -h | --help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "model_rss.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
[ -x /usr/bin/time ] || { echo "model_rss.sh: needs /usr/bin/time (Debian package time)" >&2; exit 1; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/rotor-model-rss.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

# Few ratings, wide factors: the model, not the data, fills the memory.
"$ROTOR" gen mf --rows "$rows" --cols "$cols" --nnz $((rows * 10)) --rank 4 --seed 1 \
    --out "$TMP/r.txt" 2>/dev/null
"$ROTOR" partition --input "$TMP/r.txt" --nodes 2 --threads "$threads" --pipeline "$pipeline" \
    --seed 1 --out "$TMP/plan" >/dev/null 2>&1

# job BINARY TAG [--out DIR]: peak RSS (KiB) of each rank into $TMP/TAG.R
job() {
    local bin=$1 tag=$2; shift 2
    # shellcheck disable=SC2016
    "$bin" launch -n 2 -- sh -c '/usr/bin/time -f %M -o "$0.$ROTOR_RANK" "$@"' "$TMP/$tag" \
        "$bin" train --plan "$TMP/plan" --app sgd-mf --rank "$k" --epochs 1 --seed 1 "$@" \
        >"$TMP/$tag.log" 2>&1 || { cat "$TMP/$tag.log" >&2; exit 1; }
}
job "$ROTOR" save --out "$TMP/model"
job "$ROTOR" nosave
share() { # bytes of the part files rank R wrote
    cat "$TMP"/model/*.part-"$(printf %05d "$1")".npy | wc -c
}
/usr/bin/time -f %M -o "$TMP/export.rss" "$ROTOR" export --quiet --model "$TMP/model" \
    --out "$TMP/single" --memory "$memory"
model_bytes=$(cat "$TMP"/model/*.part-*.npy | wc -c)
w_bytes=$(stat -c %s "$TMP/single/W.npy")
h_bytes=$(stat -c %s "$TMP/single/H.npy")

old=""
if [ -n "${ROTOR_OLD:-}" ]; then
    job "$ROTOR_OLD" oldsave --out "$TMP/oldmodel"
    old=$(printf ', "old_gather": {"rank0_peak_rss_kib": %s, "rank1_peak_rss_kib": %s}' \
        "$(cat "$TMP/oldsave.0")" "$(cat "$TMP/oldsave.1")")
fi

printf '{"rows": %s, "cols": %s, "k": %s, "threads": %s, "pipeline": %s,\n' \
    "$rows" "$cols" "$k" "$threads" "$pipeline"
printf ' "W_bytes": %s, "H_bytes": %s, "model_part_bytes": %s,\n' "$w_bytes" "$h_bytes" "$model_bytes"
printf ' "ranks": ['
for r in 0 1; do
    s=$(share $r)
    with=$(cat "$TMP/save.$r")
    without=$(cat "$TMP/nosave.$r")
    printf '%s{"rank": %s, "share_bytes": %s, "peak_rss_kib": %s, "peak_rss_kib_without_out": %s, "rss_over_share": %.3f, "save_cost_kib": %s}' \
        "$([ $r = 0 ] || echo ', ')" "$r" "$s" "$with" "$without" \
        "$(awk -v a="$with" -v b="$s" 'BEGIN { print a * 1024 / b }')" $((with - without))
done
printf '],\n "export": {"memory_mb": %s, "peak_rss_kib": %s}%s,\n' "$memory" \
    "$(cat "$TMP/export.rss")" "$old"
printf ' "loadavg": "%s"}\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
