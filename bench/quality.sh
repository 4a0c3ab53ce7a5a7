#!/usr/bin/env bash
# quality.sh - model quality with default settings against LIBMF and LIBPMF
# on real data; prints JSON.
#
#   bench/quality.sh [--rounds R] [--threads T] [--anchors DIR] [--keep-runs FILE]
#
# Data (from ../shared/data, or ROTOR_DATA_DIR): MovieLens 100K u1..u5
# (the published 5-fold split) and FilmTrust cut into 5 folds by line number
# (fold f tests lines with NR % 5 == f; the file is sorted by user, so every
# fold sees every user).  Tools, all with T threads on the same folds:
#   rotor sgd-mf and cd-mf with their defaults only (1 process x T threads);
#   LIBMF (mf-train, AVX) and LIBPMF (omp-pmf-train), built from
#   ../shared/anchors by its build.sh into DIR (default /tmp/rotor-anchors),
#   each with the setting of a small grid whose mean final test RMSE over the
#   dataset's folds is best (tuned on the test folds, as their users do).
# Rounds are interleaved (round r runs every tool on every fold, in an order
# rotated per round); RMSE is the median over rounds (rotor's is the same
# bits every round), times are medians.
#
# Output: per dataset and tool the setting, the final test RMSE per fold and
# its mean, the training seconds per fold, and per pair (sgd-mf vs LIBMF,
# cd-mf vs LIBPMF) the seconds each needed to reach the other's final RMSE
# (null when it never did) and the ratio to the other's total time.  Times
# are training time: rotor's summed epoch seconds (--metrics), LIBPMF's own
# cumulative timer, LIBMF's wall time of T iterations minus that of one
# iteration (loading), spread evenly over its iterations.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROTOR=${ROTOR:-$ROOT/build/tools/rotor}
DATA=${ROTOR_DATA_DIR:-$ROOT/../shared/data}
ANCHORS_SRC=${ROTOR_ANCHORS:-$ROOT/../shared/anchors}
rounds=3 threads=2 anchors=/tmp/rotor-anchors keep=""
while [ $# -gt 0 ]; do
    case $1 in
    --rounds) rounds=$2; shift ;;
    --threads) threads=$2; shift ;;
    --anchors) anchors=$2; shift ;;
    --keep-runs) keep=$2; shift ;;
    -h|--help) sed -n '2,29p' "$0"; exit 0 ;;
    *) echo "quality.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
[ -x "$ROTOR" ] || { echo "quality.sh: build first (tools/run.sh build)" >&2; exit 2; }
[ -d "$DATA/ml-100k" ] && [ -d "$DATA/filmtrust" ] ||
    { echo "quality.sh: no MovieLens 100K / FilmTrust under $DATA" >&2; exit 2; }
eval "$("$ANCHORS_SRC/build.sh" "$anchors" | grep -E '^(LIBMF_TRAIN|LIBPMF_TRAIN)=')"
TMP=$(mktemp -d) && trap 'rm -rf "$TMP"' EXIT
load_start=$(cut -d' ' -f1-3 /proc/loadavg)

# Grids: LIBMF k x l2 (eta 0.1, 20 iterations: its defaults); LIBPMF k x
# lambda (10 outer x 5 inner iterations, eps 1e-3).
LIBMF_GRID=("-k 32 -l2 0.08" "-k 32 -l2 0.1" "-k 32 -l2 0.12" "-k 64 -l2 0.1")
LIBPMF_GRID=("-k 10 -l 0.05" "-k 10 -l 0.1" "-k 32 -l 0.1" "-k 10 -l 0.2")
LIBMF_ITERS=20

# ---- folds: $TMP/DATASET/fF.{base,test}, a LIBPMF dir and a rotor plan each
make_fold() { # make_fold DATASET F BASE TEST
    local d=$TMP/$1/f$2
    mkdir -p "$d/pmf"
    cut -f1-3 <"$3" | tr '\t' ' ' >"$d/base"
    cut -f1-3 <"$4" | tr '\t' ' ' >"$d/test"
    cp "$d/base" "$d/pmf/train.txt"
    cp "$d/test" "$d/pmf/test.txt"
    local m n
    m=$(cat "$d/base" "$d/test" | awk '$1 > m { m = $1 } END { print m }')
    n=$(cat "$d/base" "$d/test" | awk '$2 > n { n = $2 } END { print n }')
    printf '%s %s\n%s train.txt\n%s test.txt\n' "$m" "$n" "$(wc -l <"$d/base")" \
        "$(wc -l <"$d/test")" >"$d/pmf/meta"
    "$ROTOR" partition --input "$d/base" --test "$d/test" --nodes 1 --threads "$threads" \
        --seed 1 --out "$d/plan" >/dev/null 2>&1
}
for f in 1 2 3 4 5; do
    xz -dc "$DATA/ml-100k/u$f.base.xz" >"$TMP/b" && xz -dc "$DATA/ml-100k/u$f.test.xz" >"$TMP/t"
    make_fold ml100k "$f" "$TMP/b" "$TMP/t"
done
xz -dc "$DATA/filmtrust/ratings.txt.xz" >"$TMP/ft.txt"
for f in 1 2 3 4 5; do
    awk -v f="$f" 'NR % 5 != f - 1' "$TMP/ft.txt" >"$TMP/b"
    awk -v f="$f" 'NR % 5 == f - 1' "$TMP/ft.txt" >"$TMP/t"
    make_fold filmtrust "$f" "$TMP/b" "$TMP/t"
done

# ---- runs: each appends "DATASET FOLD TOOL SETTING ROUND t1:r1,t2:r2,..." to
# $TMP/runs (cumulative training seconds and test RMSE after each iteration)
now() { date +%s.%N; }
run_rotor() { # run_rotor DATASET F APP ROUND
    local d=$TMP/$1/f$2 m=$TMP/metrics.json
    "$ROTOR" train --plan "$d/plan" --app "$3" --metrics "$m" >/dev/null 2>&1
    tr '{' '\n' <"$m" | awk '/"test_rmse"/ {
        match($0, /"seconds": [0-9.e+-]+/); s = substr($0, RSTART + 11, RLENGTH - 11)
        match($0, /"test_rmse": [0-9.e+-]+/); r = substr($0, RSTART + 13, RLENGTH - 13)
        t += s; out = out (out == "" ? "" : ",") t ":" r }
        END { print out }' | sed "s/^/$1 $2 rotor-$3 defaults $4 /" >>"$TMP/runs"
}
run_libmf() { # run_libmf DATASET F SETTING ROUND
    local d=$TMP/$1/f$2 t0 t1 t2
    t0=$(now)
    "$LIBMF_TRAIN" $3 -t 1 -s "$threads" "$d/base" "$TMP/mf.model" >/dev/null
    t1=$(now)
    "$LIBMF_TRAIN" $3 -t "$LIBMF_ITERS" -s "$threads" -p "$d/test" "$d/base" "$TMP/mf.model" \
        >"$TMP/mf.log"
    t2=$(now)
    awk -v once="$(echo "$t1 - $t0" | bc -l)" -v all="$(echo "$t2 - $t1" | bc -l)" \
        -v iters="$LIBMF_ITERS" '$1 ~ /^[0-9]+$/ {
        per = (all - once) / iters; if (per < 0) per = all / iters
        out = out (out == "" ? "" : ",") per * ($1 + 1) ":" $3 }
        END { print out }' "$TMP/mf.log" | sed "s/^/$1 $2 libmf ${3// /_} $4 /" >>"$TMP/runs"
}
run_libpmf() { # run_libpmf DATASET F SETTING ROUND
    local d=$TMP/$1/f$2 k
    k=$(sed 's/.*-k \([0-9]*\).*/\1/' <<<"$3")
    "$LIBPMF_TRAIN" $3 -n "$threads" -t 10 -p 1 -q 1 "$d/pmf" "$TMP/pmf.model" 2>/dev/null |
        awk -v k="$k" '$1 == "iter" && $3 == "rank" && $4 == k {
            out = out (out == "" ? "" : ",") $6 ":" $NF }
            END { print out }' | sed "s/^/$1 $2 libpmf ${3// /_} $4 /" >>"$TMP/runs"
}
: >"$TMP/runs"
for r in $(seq 1 "$rounds"); do
    for ds in ml100k filmtrust; do
        for f in 1 2 3 4 5; do
            jobs=("run_rotor $ds $f sgd-mf $r" "run_rotor $ds $f cd-mf $r")
            for s in "${LIBMF_GRID[@]}"; do jobs+=("run_libmf $ds $f '$s' $r"); done
            for s in "${LIBPMF_GRID[@]}"; do jobs+=("run_libpmf $ds $f '$s' $r"); done
            n=${#jobs[@]}
            for i in $(seq 0 $((n - 1))); do eval "${jobs[$(((i + r) % n))]}"; done
        done
    done
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
[ -z "$keep" ] || cp "$TMP/runs" "$keep"

# ---- summary (awk): medians over rounds, best grid setting per dataset and
# anchor, time to reach the other tool's final RMSE
awk -v load_start="$load_start" -v load_end="$load_end" -v rounds="$rounds" -v threads="$threads" '
function median(list,   a, n, i, j, x) {
    n = split(list, a, " ")
    for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function last_rmse(traj,   p, n, q) { n = split(traj, p, ","); split(p[n], q, ":"); return q[2] }
function last_time(traj,   p, n, q) { n = split(traj, p, ","); split(p[n], q, ":"); return q[1] }
function reach(traj, target,   p, n, i, q) { # seconds until test RMSE <= target, -1 = never
    n = split(traj, p, ",")
    for (i = 1; i <= n; i++) { split(p[i], q, ":"); if (q[2] + 0 <= target + 0) return q[1] }
    return -1
}
function num(x) { return x < 0 ? "null" : sprintf("%.4g", x) }
{   key = $1 SUBSEP $2 SUBSEP $3 SUBSEP $4
    rm[key] = rm[key] " " last_rmse($6); tm[key] = tm[key] " " last_time($6)
    traj[key SUBSEP $5] = $6; sets[$1 SUBSEP $3 SUBSEP $4] = 1 }
END {
    nds = split("ml100k filmtrust", dss, " ")
    ntools = split("rotor-sgd-mf rotor-cd-mf libmf libpmf", tools, " ")
    printf "{\"rounds\": %d, \"threads\": %d, \"load_start\": \"%s\", \"load_end\": \"%s\",\n", rounds, threads, load_start, load_end
    printf " \"datasets\": {\n"
    for (d = 1; d <= nds; d++) {
        ds = dss[d]
        for (t = 1; t <= ntools; t++) {   # the best setting: lowest mean of median final RMSE
            tool = tools[t]; best[tool] = ""; bestm = 1e9
            for (k in sets) {
                split(k, s, SUBSEP); if (s[1] != ds || s[2] != tool) continue
                m = 0; for (f = 1; f <= 5; f++) m += median(rm[ds SUBSEP f SUBSEP tool SUBSEP s[3]]) / 5
                grid[tool SUBSEP s[3]] = m
                if (m < bestm) { bestm = m; best[tool] = s[3] }
            }
            mean[tool] = bestm
        }
        printf "  \"%s\": {\n", ds
        for (t = 1; t <= ntools; t++) {
            tool = tools[t]; st = best[tool]
            printf "   \"%s\": {\"setting\": \"%s\", \"mean_rmse\": %.5f, \"rmse\": [", tool, st, mean[tool]
            for (f = 1; f <= 5; f++) printf "%s%.5f", (f > 1 ? ", " : ""), median(rm[ds SUBSEP f SUBSEP tool SUBSEP st])
            printf "], \"seconds\": ["
            for (f = 1; f <= 5; f++) printf "%s%.4g", (f > 1 ? ", " : ""), median(tm[ds SUBSEP f SUBSEP tool SUBSEP st])
            printf "]"
            if (tool ~ /^lib/) {
                printf ", \"grid_mean_rmse\": {"; c = 0
                for (k in grid) { split(k, s, SUBSEP); if (s[1] == tool) { printf "%s\"%s\": %.5f", (c++ ? ", " : ""), s[2], grid[k] }; }
                printf "}"; for (k in grid) { split(k, s, SUBSEP); if (s[1] == tool) delete grid[k] }
            }
            printf "},\n"
        }
        npairs = split("rotor-sgd-mf:libmf rotor-cd-mf:libpmf", pairs, " ")
        printf "   \"time_to_reach\": {"
        for (q = 1; q <= npairs; q++) {
            split(pairs[q], ab, ":"); a = ab[1]; b = ab[2]
            printf "%s\n    \"%s_vs_%s\": {", (q > 1 ? "," : ""), a, b
            for (dir = 0; dir < 2; dir++) {
                x = dir ? b : a; y = dir ? a : b
                printf "%s\"%s_to_%s_final\": {\"seconds\": [", (dir ? ", " : ""), x, y
                ratios = ""
                for (f = 1; f <= 5; f++) {
                    secs = ""; tot = ""
                    for (r = 1; r <= rounds; r++) {
                        tx = traj[ds SUBSEP f SUBSEP x SUBSEP best[x] SUBSEP r]
                        ty = traj[ds SUBSEP f SUBSEP y SUBSEP best[y] SUBSEP r]
                        secs = secs " " reach(tx, last_rmse(ty)); tot = tot " " last_time(ty)
                    }
                    s1 = median(secs); s2 = median(tot)
                    printf "%s%s", (f > 1 ? ", " : ""), num(s1)
                    ratios = ratios (f > 1 ? ", " : "") (s1 < 0 ? "null" : sprintf("%.3f", s1 / s2))
                }
                printf "], \"ratio_to_%s_total\": [%s]}", y, ratios
            }
            printf "}"
        }
        printf "}\n  }%s\n", (d < nds ? "," : "")
    }
    printf " }\n}\n"
}' "$TMP/runs"
