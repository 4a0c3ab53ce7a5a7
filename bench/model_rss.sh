#!/usr/bin/env bash
# model_rss.sh - memory of training and saving a model bigger on H than on W:
# each rank's peak RSS (/usr/bin/time %M) against its own share of the model
# (the bytes of the part files it wrote), for a 2-rank SGD-MF job, with --out
# and without (the difference is what saving costs), raw and with the
# baseline subtracted: the same job at --rank 1, whose model is a few KB, so
# what it uses (libraries, threads, ratings, plan, sockets) is what a rank
# costs whatever the model.  Also the peak RSS of `rotor export` merging the
# model with --memory MB of buffers.  Every job runs --rounds times,
# interleaved with ROTOR_OLD's when set; figures are medians.  With
# ROTOR_OLD=path/to/an/older/rotor the same jobs are measured with it too.
# Prints JSON on stdout.
#
# --spare-slots S trains with S spare window slots (rotor train --spare-slots;
# not passed to ROTOR_OLD).
#
#   bench/model_rss.sh [--rows N] [--cols N] [--rank K] [--threads T] [--pipeline C]
#                      [--memory MB] [--rounds N] [--spare-slots S] [--rotor PATH]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
rows=4000 cols=16000 rank=512 threads=2 pipeline=2 memory=16 rounds=1 spare_slots=1 rotor=$ROTOR
bench_options 2,18 "$@"
ROTOR=$rotor
[ -x /usr/bin/time ] || bench_fail "needs /usr/bin/time (Debian package time)"
bench_start

# Few ratings, wide factors: the model, not the data, fills the memory.
"$ROTOR" gen mf --rows "$rows" --cols "$cols" --nnz $((rows * 10)) --rank 4 --seed 1 \
    --out "$TMP/r.txt" 2>/dev/null
"$ROTOR" partition --input "$TMP/r.txt" --nodes 2 --threads "$threads" --pipeline "$pipeline" \
    --seed 1 --out "$TMP/plan" >/dev/null 2>&1

# job BINARY TAG K [--out DIR]: append each rank's peak RSS (KiB) to $TMP/TAG.R
job() {
    local bin=$1 tag=$2 k=$3
    shift 3
    rm -rf "$TMP/model.$tag"
    # shellcheck disable=SC2016
    "$bin" launch -n 2 -- sh -c '/usr/bin/time -f %M -o "$0.$ROTOR_RANK.now" "$@"' "$TMP/$tag" \
        "$bin" train --plan "$TMP/plan" --app sgd-mf --rank "$k" --epochs 1 --seed 1 "$@" \
        >"$TMP/$tag.log" 2>&1 || { cat "$TMP/$tag.log" >&2; exit 1; }
    for r in 0 1; do cat "$TMP/$tag.$r.now" >>"$TMP/$tag.$r"; done
}
# jobs BINARY PREFIX [TRAIN-OPTIONS]: one round of the three jobs
jobs() {
    local bin=$1 tag=$2
    shift 2
    job "$bin" "${tag}save" "$rank" --out "$TMP/model.${tag}save" "$@"
    job "$bin" "${tag}nosave" "$rank" "$@"
    job "$bin" "${tag}base" 1 "$@"
}
spare=()
[ "$spare_slots" = 1 ] || spare=(--spare-slots "$spare_slots")
for _ in $(seq "$rounds"); do
    jobs "$ROTOR" "" "${spare[@]}"
    [ -z "${ROTOR_OLD:-}" ] || jobs "$ROTOR_OLD" old
done
share() { # bytes of the part files rank R wrote
    cat "$TMP"/model.save/*.part-"$(printf %05d "$1")".npy | wc -c
}
/usr/bin/time -f %M -o "$TMP/export.rss" "$ROTOR" export --quiet --model "$TMP/model.save" \
    --out "$TMP/single" --memory "$memory"
model_bytes=$(cat "$TMP"/model.save/*.part-*.npy | wc -c)
w_bytes=$(stat -c %s "$TMP/single/W.npy")
h_bytes=$(stat -c %s "$TMP/single/H.npy")

# ranks PREFIX: the per-rank JSON objects of one binary's jobs
ranks() {
    local sep="" r s with without base
    for r in 0 1; do
        s=$(share $r)
        with=$(median <"$TMP/$1save.$r")
        without=$(median <"$TMP/$1nosave.$r")
        base=$(median <"$TMP/$1base.$r")
        printf '%s{"rank": %s, "share_kib": %s, "peak_rss_kib": %s, "peak_rss_kib_without_out": %s, ' \
            "$sep" "$r" $((s / 1024)) "$with" "$without"
        printf '"baseline_rss_kib": %s, "rss_over_share": %.3f, "rss_minus_baseline_over_share": %.3f, ' \
            "$base" "$(awk -v a="$with" -v b="$s" 'BEGIN { print a * 1024 / b }')" \
            "$(awk -v a="$with" -v z="$base" -v b="$s" 'BEGIN { print (a - z) * 1024 / b }')"
        printf '"save_cost_kib": %s}' "$(awk -v a="$with" -v b="$without" 'BEGIN { print a - b }')"
        sep=", "
    done
}

printf '{"rows": %s, "cols": %s, "k": %s, "threads": %s, "pipeline": %s, "spare_slots": %s, "rounds": %s,\n' \
    "$rows" "$cols" "$rank" "$threads" "$pipeline" "$spare_slots" "$rounds"
printf ' "W_bytes": %s, "H_bytes": %s, "model_part_bytes": %s,\n' "$w_bytes" "$h_bytes" "$model_bytes"
printf ' "ranks": [%s],\n' "$(ranks "")"
[ -z "${ROTOR_OLD:-}" ] || printf ' "old": {"rotor": "%s", "ranks": [%s]},\n' "$ROTOR_OLD" "$(ranks old)"
printf ' "export": {"memory_mb": %s, "peak_rss_kib": %s},\n' "$memory" "$(cat "$TMP/export.rss")"
printf ' "loadavg": "%s"}\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
