#!/usr/bin/env bash
# quality.sh - model quality with default settings against LIBMF and LIBPMF
# on real data; prints JSON.
#
#   bench/quality.sh [--rounds R] [--threads T] [--anchors DIR] [--keep-runs DIR]
#                    [--only sgd|cd] [--thinned]
#   bench/quality.sh --from-runs DIR     (the summary again from saved runs)
#
# --only sgd runs rotor sgd-mf and LIBMF's grid only, --only cd rotor cd-mf
# and LIBPMF's (LIBPMF's grid takes most of a full run's time); the summary
# shows the tools that have runs.
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
#   bias: the mean-plus-biases model mu + b_u + b_i (15 alternating sweeps
#     of b = sum(r - the rest) / (n + d), in awk), the best damping d of
#     2, 3 and 5: what a factorisation must beat where rows have few ratings.
# --thinned adds ml100k-quarter and filmtrust-quarter: the same folds with
# every fourth training line kept (NR % 4 == 1; ~21 ratings a user on
# MovieLens), tested on the whole test fold.
# Rounds are interleaved: round r runs every tool on every fold, the folds
# and the tools in an order rotated per round.  RMSE is the median over
# rounds (rotor's is the same bits every round).
#
# Every run's raw output (rotor's --metrics JSON, the anchors' logs, wall
# times) goes to DIR/logs with --keep-runs DIR (else a scratch directory);
# the summary is computed from those files only, so --from-runs DIR prints it
# again (after a change to this script's accounting) without training.
#
# Output: per dataset and tool the setting, the final test RMSE per fold and
# its mean, the training seconds per fold; per pair (sgd-mf vs LIBMF, cd-mf
# vs LIBPMF) and direction, for every fold the median over rounds of the
# ratio (seconds to reach the other's final RMSE in that round) / (the
# other's total seconds in that round), then the median and the worst fold
# (null: never reached in most rounds).  Two clocks:
#   train: training time only.  rotor: its summed rotation seconds (what the
#     epoch log shows; the per-epoch log and --metrics writes between
#     rotations are not in it).  LIBMF: from the wall times w1 and wN of runs
#     of 1 and N iterations (both scoring the test set every iteration), an
#     iteration costs (wN - w1) / (N - 1) and loading w1 minus one iteration;
#     iteration i ends at i iteration costs.  LIBPMF: its own cumulative timer.
#   wall: process wall time from the text files to the saved model on both
#     sides: LIBMF parses its text input and writes its model in its run;
#     rotor's wall is `rotor partition` of the same text files (into a fresh
#     plan every run) plus `rotor train --out`.  Rotor is charged everything
#     outside its rotations (start-up, partitioning, per-epoch evaluation and
#     --metrics writes, the model save) in full, whether it came before the
#     target or after; LIBMF its loading.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
rounds=3 threads=2 anchors=/tmp/rotor-anchors keep_runs="" from_runs="" only="" thinned=0
BENCH_FLAGS=([thinned]=thinned=1)
bench_options 2,55 "$@"
case $only in "" | sgd | cd) ;; *) bench_fail "--only: sgd or cd, not '$only'" ;; esac
DATA=${ROTOR_DATA_DIR:-$ROOT/../shared/data}
ANCHORS_SRC=${ROTOR_ANCHORS:-$ROOT/../shared/anchors}
LIBMF_ITERS=20

if [ -n "$from_runs" ]; then
    RUNS=$(realpath "$from_runs")
    [ -f "$RUNS/meta" ] && [ -d "$RUNS/logs" ] || bench_fail "$RUNS: no saved runs (meta, logs/)"
    TMP=$(mktemp -d) && trap 'rm -rf "$TMP"' EXIT
else
    bench_start
    [ -d "$DATA/ml-100k" ] && [ -d "$DATA/filmtrust" ] ||
        bench_fail "no MovieLens 100K / FilmTrust under $DATA"
    eval "$("$ANCHORS_SRC/build.sh" "$anchors" | grep -E '^(LIBMF_TRAIN|LIBPMF_TRAIN)=')"
    RUNS=$(realpath -m "${keep_runs:-$TMP/runs}")
    rm -rf "$RUNS/logs" && mkdir -p "$RUNS/logs"
fi

# Grids: LIBMF k x l2 (eta 0.1, 20 iterations: its defaults); LIBPMF k x
# lambda (10 outer x 5 inner iterations, eps 1e-3).
LIBMF_GRID=("-k 32 -l2 0.08" "-k 32 -l2 0.1" "-k 32 -l2 0.12" "-k 64 -l2 0.1")
LIBPMF_GRID=("-k 10 -l 0.05" "-k 10 -l 0.1" "-k 32 -l 0.1" "-k 10 -l 0.2")
BIAS_GRID=("-d 2" "-d 3" "-d 5")
DATASETS="ml100k filmtrust"
[ "$thinned" = 1 ] && DATASETS="$DATASETS ml100k-quarter filmtrust-quarter"

# ---- folds: $TMP/DATASET/fF.{base,test} and a LIBPMF dir each
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
}
make_folds() {
    local f
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
    [ "$thinned" = 1 ] || return 0
    for ds in ml100k filmtrust; do
        for f in 1 2 3 4 5; do
            awk 'NR % 4 == 1' "$TMP/$ds/f$f/base" >"$TMP/b"
            make_fold "$ds-quarter" "$f" "$TMP/b" "$TMP/$ds/f$f/test"
        done
    done
}

# ---- runs: each leaves RUNS/logs/DATASET.fF.TOOL.SETTING.rR.{json|log} and
# .wall (wall seconds: rotor "partition+train partition", LIBPMF the run's;
# LIBMF "w1 wN")
now() { date +%s.%N; }
since() { echo "$(now) - $1" | bc -l; }
log_name() { echo "$RUNS/logs/$1.f$2.$3.${4// /_}.r$5"; } # DATASET F TOOL SETTING ROUND
run_rotor() { # run_rotor DATASET F APP ROUND
    local d=$TMP/$1/f$2 out t0 part
    out=$(log_name "$1" "$2" "rotor-$3" defaults "$4")
    rm -rf "$TMP/plan" "$TMP/rotor.model"
    t0=$(now)
    "$ROTOR" partition --input "$d/base" --test "$d/test" --nodes 1 --threads "$threads" \
        --seed 1 --out "$TMP/plan" >/dev/null 2>&1
    part=$(since "$t0")
    "$ROTOR" train --plan "$TMP/plan" --app "$3" --metrics "$out.json" --out "$TMP/rotor.model" \
        >/dev/null 2>&1
    echo "$(since "$t0") $part" >"$out.wall"
}
run_libmf() { # run_libmf DATASET F SETTING ROUND
    local d=$TMP/$1/f$2 out t0 w1
    out=$(log_name "$1" "$2" libmf "$3" "$4")
    t0=$(now)
    "$LIBMF_TRAIN" $3 -t 1 -s "$threads" -p "$d/test" "$d/base" "$TMP/mf.model" >/dev/null
    w1=$(since "$t0")
    t0=$(now)
    "$LIBMF_TRAIN" $3 -t "$LIBMF_ITERS" -s "$threads" -p "$d/test" "$d/base" "$TMP/mf.model" \
        >"$out.log"
    echo "$w1 $(since "$t0")" >"$out.wall"
}
run_libpmf() { # run_libpmf DATASET F SETTING ROUND
    local d=$TMP/$1/f$2 out t0
    out=$(log_name "$1" "$2" libpmf "$3" "$4")
    t0=$(now)
    # (in $TMP: it leaves p.txt and q.txt in its working directory)
    (cd "$TMP" && "$LIBPMF_TRAIN" $3 -n "$threads" -t 10 -p 1 -q 1 "$d/pmf" "$TMP/pmf.model" \
        >"$out.log" 2>/dev/null)
    since "$t0" >"$out.wall"
}
run_bias() { # run_bias DATASET F SETTING ROUND: test RMSE of the damped biases
    local d=$TMP/$1/f$2 out t0
    out=$(log_name "$1" "$2" bias "$3" "$4")
    t0=$(now)
    awk -v d="${3#-d }" 'NR == FNR { u[NR] = $1; i[NR] = $2; r[NR] = $3; s += $3; n = NR
                                     nu[$1]++; ni[$2]++; next }
        FNR == 1 { mu = s / n
            for (it = 0; it < 15; it++) {
                delete su; delete si
                for (k = 1; k <= n; k++) su[u[k]] += r[k] - mu - bi[i[k]]
                for (x in nu) bu[x] = su[x] / (nu[x] + d)
                for (k = 1; k <= n; k++) si[i[k]] += r[k] - mu - bu[u[k]]
                for (x in ni) bi[x] = si[x] / (ni[x] + d) } }
        ($1 in nu) && ($2 in ni) { e = mu + bu[$1] + bi[$2] - $3; sse += e * e; m++ }
        END { printf "%.6f\n", sqrt(sse / m) }' "$d/base" "$d/test" >"$out.log"
    since "$t0" >"$out.wall"
}
train_all() {
    local r ds f i n s order
    for r in $(seq 1 "$rounds"); do
        for ds in $DATASETS; do
            order=$(seq 1 5 | awk -v r="$r" '{ a[NR] = $1 } END { for (i = 0; i < 5; i++) print a[(i + r - 1) % 5 + 1] }')
            for f in $order; do
                jobs=()
                if [ "$only" != cd ]; then
                    jobs+=("run_rotor $ds $f sgd-mf $r")
                    for s in "${LIBMF_GRID[@]}"; do jobs+=("run_libmf $ds $f '$s' $r"); done
                fi
                if [ "$only" != sgd ]; then
                    jobs+=("run_rotor $ds $f cd-mf $r")
                    for s in "${LIBPMF_GRID[@]}"; do jobs+=("run_libpmf $ds $f '$s' $r"); done
                fi
                for s in "${BIAS_GRID[@]}"; do jobs+=("run_bias $ds $f '$s' $r"); done
                n=${#jobs[@]}
                for i in $(seq 0 $((n - 1))); do eval "${jobs[$(((i + r) % n))]}"; done
            done
        done
    done
}

if [ -z "$from_runs" ]; then
    make_folds
    load_start=$(cut -d' ' -f1-3 /proc/loadavg)
    train_all
    printf 'rounds %s\nthreads %s\nlibmf_iters %s\nload_start %s\nload_end %s\ndate %s\ndatasets %s\n' \
        "$rounds" "$threads" "$LIBMF_ITERS" "$load_start" "$(cut -d' ' -f1-3 /proc/loadavg)" \
        "$(date -u +%FT%TZ)" "$DATASETS" >"$RUNS/meta"
fi
meta() { awk -v k="$1" '$1 == k { $1 = ""; sub(/^ /, ""); print }' "$RUNS/meta"; }

# ---- the table: one line per run, "DATASET FOLD TOOL SETTING ROUND STARTUP
# t1:r1,t2:r2,..." (cumulative training seconds and test RMSE after each
# iteration; STARTUP = wall seconds outside training), from the raw files
table_line() { # table_line BASE (a log_name)
    local b=$1 name ds f tool set r wall
    name=$(basename "$b")
    # (settings hold dots, as in -l2_0.1: take the fields from both ends)
    ds=${name%%.*}
    f=$(cut -d. -f2 <<<"$name")
    tool=$(cut -d. -f3 <<<"$name")
    r=${name##*.r}
    set=${name#"$ds.$f.$tool."}
    set=${set%".r$r"}
    read -r -a wall <"$b.wall"
    case $tool in
    rotor-*)
        tr -d ' \n' <"$b.json" | tr '{' '\n' | awk -v wall="${wall[0]}" '/"test_rmse"/ {
            match($0, /"seconds":[0-9.e+-]+/); s = substr($0, RSTART + 10, RLENGTH - 10)
            match($0, /"test_rmse":[0-9.e+-]+/); r = substr($0, RSTART + 12, RLENGTH - 12)
            t += s; out = out (out == "" ? "" : ",") t ":" r }
            END { print wall - t, out }' ;;
    libmf)
        awk -v w1="${wall[0]}" -v wn="${wall[1]}" -v n="$(meta libmf_iters)" '
            $1 ~ /^[0-9]+$/ { i = $1 + 1; rm[i] = $3 }
            END {
                per = (wn - w1) / (n - 1); load = w1 - per
                if (per <= 0 || load < 0) { per = wn / n; load = 0 }   # noise: no split
                for (i = 1; i <= n; i++) out = out (i > 1 ? "," : "") per * i ":" rm[i]
                print load, out }' "$b.log" ;;
    libpmf)
        local k
        k=$(sed 's/.*-k_\([0-9]*\).*/\1/' <<<"$set")
        awk -v k="$k" -v wall="${wall[0]}" '$1 == "iter" && $3 == "rank" && $4 == k {
            t = $6; out = out (out == "" ? "" : ",") $6 ":" $NF }
            END { print wall - t, out }' "$b.log" ;;
    bias) echo "0 ${wall[0]}:$(cat "$b.log")" ;;
    esac | sed "s/^/$ds ${f#f} $tool $set $r /"
}
for w in "$RUNS"/logs/*.wall; do table_line "${w%.wall}"; done >"$RUNS/table"
[ -s "$RUNS/table" ] || bench_fail "$RUNS/logs: no runs"

# ---- summary (awk): medians over rounds, best grid setting per dataset and
# anchor, time to reach the other tool's final RMSE
awk -v load_start="$(meta load_start)" -v load_end="$(meta load_end)" -v rounds="$(meta rounds)" \
    -v threads="$(meta threads)" -v when="$(meta date)" -v datasets="$(meta datasets)" '
function sort_num(a, n,   i, j, x) {
    for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
}
function median(list,   a, n) {
    n = split(list, a, " "); sort_num(a, n)
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function last_rmse(traj,   p, n, q) { n = split(traj, p, ","); split(p[n], q, ":"); return q[2] }
function last_time(traj,   p, n, q) { n = split(traj, p, ","); split(p[n], q, ":"); return q[1] }
function reach(traj, target,   p, n, i, q) { # seconds until test RMSE <= target, -1 = never
    n = split(traj, p, ",")
    for (i = 1; i <= n; i++) { split(p[i], q, ":"); if (q[2] + 0 <= target + 0) return q[1] }
    return -1
}
function num(x) { return x >= 1e9 ? "null" : sprintf("%.3f", x) }
function list(a, n,   i, s) { s = ""; for (i = 1; i <= n; i++) s = s (i > 1 ? ", " : "") num(a[i]); return s }
# "ratio_TOOL": per fold the median over rounds, then median and worst fold
# (never reached counts as infinite).
function ratios(name, v,   f, m, w, c, a) {
    for (f = 1; f <= 5; f++) a[f] = v[f]
    sort_num(a, 5)
    printf ", \"%s\": {\"folds\": [%s], \"median\": %s, \"worst\": %s}", name, list(v, 5), num(a[3]), num(a[5])
}
{   key = $1 SUBSEP $2 SUBSEP $3 SUBSEP $4
    rm[key] = rm[key] " " last_rmse($7); tm[key] = tm[key] " " last_time($7)
    traj[key SUBSEP $5] = $7; boot[key SUBSEP $5] = $6; sets[$1 SUBSEP $3 SUBSEP $4] = 1
    if ($5 > nr) nr = $5 }
END {
    nds = split(datasets == "" ? "ml100k filmtrust" : datasets, dss, " ")
    ntools = split("rotor-sgd-mf rotor-cd-mf libmf libpmf bias", tools, " ")
    printf "{\"rounds\": %d, \"threads\": %d, \"date\": \"%s\", \"load_start\": \"%s\", \"load_end\": \"%s\",\n", rounds, threads, when, load_start, load_end
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
            if (st == "") continue   # not run (--only)
            printf "   \"%s\": {\"setting\": \"%s\", \"mean_rmse\": %.5f, \"rmse\": [", tool, st, mean[tool]
            for (f = 1; f <= 5; f++) printf "%s%.5f", (f > 1 ? ", " : ""), median(rm[ds SUBSEP f SUBSEP tool SUBSEP st])
            printf "], \"seconds\": ["
            for (f = 1; f <= 5; f++) printf "%s%.4g", (f > 1 ? ", " : ""), median(tm[ds SUBSEP f SUBSEP tool SUBSEP st])
            printf "]"
            if (tool ~ /^(lib|bias)/) {
                printf ", \"grid_mean_rmse\": {"; c = 0
                for (k in grid) { split(k, s, SUBSEP); if (s[1] == tool) { printf "%s\"%s\": %.5f", (c++ ? ", " : ""), s[2], grid[k] }; }
                printf "}"; for (k in grid) { split(k, s, SUBSEP); if (s[1] == tool) delete grid[k] }
            }
            printf "},\n"
        }
        npairs = split("rotor-sgd-mf:libmf rotor-cd-mf:libpmf", pairs, " ")
        printf "   \"time_to_reach\": {"
        c = 0
        for (q = 1; q <= npairs; q++) {
            split(pairs[q], ab, ":"); a = ab[1]; b = ab[2]
            if (best[a] == "" || best[b] == "") continue
            printf "%s\n    \"%s_vs_%s\": {", (c++ ? "," : ""), a, b
            for (dir = 0; dir < 2; dir++) {
                x = dir ? b : a; y = dir ? a : b
                for (f = 1; f <= 5; f++) {
                    secs = rt = rw = ""
                    for (r = 1; r <= nr; r++) {
                        kx = ds SUBSEP f SUBSEP x SUBSEP best[x] SUBSEP r
                        ky = ds SUBSEP f SUBSEP y SUBSEP best[y] SUBSEP r
                        if (!(kx in traj) || !(ky in traj)) continue
                        at = reach(traj[kx], last_rmse(traj[ky])); tot = last_time(traj[ky])
                        if (at < 0) { secs = secs " 1e9"; rt = rt " 1e9"; rw = rw " 1e9"; continue }
                        secs = secs " " at; rt = rt " " at / tot
                        rw = rw " " (boot[kx] + at) / (boot[ky] + tot)
                    }
                    sec[f] = median(secs); rtrain[f] = median(rt); rwall[f] = median(rw)
                }
                printf "%s\n     \"%s_to_%s_final\": {\"seconds\": [%s]", (dir ? "," : ""), x, y, list(sec, 5)
                ratios("ratio_train", rtrain); ratios("ratio_wall", rwall)
                printf "}"
            }
            printf "}"
        }
        printf "}\n  }%s\n", (d < nds ? "," : "")
    }
    printf " }\n}\n"
}' "$RUNS/table"
