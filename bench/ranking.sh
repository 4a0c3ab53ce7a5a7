#!/usr/bin/env bash
# ranking.sh - ranking quality on MovieLens 100K u1 and a FilmTrust fold, and
# `rotor recommend` throughput; prints JSON.
#
#   bench/ranking.sh [--rounds R] [--threads T] [--anchors DIR] [--naive-users N]
#                    [--no-quality] [--no-throughput] [--users N --items N]
#
# Quality (../shared/data or ROTOR_DATA_DIR; u1.base trains and u1.test is
# held out; FilmTrust holds out every fifth rating; every test rating
# relevant, training items excluded): precision@10 and NDCG@10 from
# `rotor eval --top-k 10` (one evaluator for every model) of
#   - the most-popular baseline (items by number of training users);
#   - rotor's apps with their defaults: sgd-mf, cd-mf, sgd-mf --implicit and
#     cd-mf --implicit (ROTOR_RUNS below);
#   - LIBMF one-class (the training pairs as all-ones) -f 12 (squared loss, CD)
#     and -f 10 (row-oriented pairwise log loss), each with the best setting
#     of a small grid (LIBMF's defaults among them) by NDCG@10 (tuned on the
#     test fold, as its users would), built from ../shared/anchors by its
#     build.sh into DIR (default /tmp/rotor-anchors); its text model is
#     converted to a rotor model directory (W.npy, H.npy).
# "rotor_defaults_beat_libmf_best" says, per implicit run, whether it is above
# LIBMF's best of the grid by both figures (the issue's must-show).
# (ROTOR_BENCH_LIBMF_ITERS=N changes its 20 iterations, for a quick check.)
# LIBMF is multithreaded and not deterministic: its figures are medians over
# R interleaved rounds (rotor's are the same bits every round); it runs with
# OMP_WAIT_POLICY=passive (its OpenMP threads spin otherwise, which on a
# loaded machine makes a run minutes instead of seconds; results unchanged).
#
# Throughput: a model of 100k users x 20k items, k = 32 (rotor gen mf, one
# epoch of sgd-mf --no-biases), K = 32: `rotor recommend` on T threads with
# and without the plan's exclusions, against a naive per-user loop (plain
# dot products, sort all items; bench/recommend_naive.c, on the first N users,
# default 2000) and against OpenBLAS cblas_sgemm blocks + a K-heap per user
# when pkg-config finds openblas.  Wall times, medians over R interleaved
# rounds, users/s and ratios.  Needs python3 (JSON), xz and a C compiler.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
DATA=${ROTOR_DATA_DIR:-$ROOT/../shared/data}
ANCHORS_SRC=${ROTOR_ANCHORS:-$ROOT/../shared/anchors}
rounds=3 threads=2 anchors=/tmp/rotor-anchors naive_users=2000 throughput=1 quality=1
users=100000 items=20000
BENCH_FLAGS=([no-throughput]=throughput=0 [no-quality]=quality=0)
bench_options 2,30 "$@"
bench_start
[ -f "$DATA/ml-100k/u1.base.xz" ] || bench_fail "no MovieLens 100K under $DATA"
eval "$("$ANCHORS_SRC/build.sh" "$anchors" | grep -E '^LIBMF_TRAIN=')"
export ROTOR_LOG=warn
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
jget() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval('d'+sys.argv[2]))" "$@"; }

# rotor's runs: NAME|train arguments.  The implicit-feedback runs join when
# `rotor train` knows --implicit (item 1 of issue 14).  (The help is read
# whole: piped into grep -q, which exits at the first match, rotor's next
# write could take SIGPIPE, and under pipefail the test then failed and
# dropped the implicit runs from a loaded run's JSON.)
ROTOR_RUNS=("sgd-mf|--app sgd-mf" "cd-mf|--app cd-mf")
if [[ $("$ROTOR" train --help 2>/dev/null || true) == *--implicit* ]]; then
    ROTOR_RUNS+=("sgd-mf-implicit|--app sgd-mf --implicit" "cd-mf-implicit|--app cd-mf --implicit")
fi
# LIBMF one-class grids (-k 32, 20 iterations, T threads), each loss with
# LIBMF's own defaults (-l2 0.1, -a 1, -r 0.1) first.
LIBMF_GRID=("-f 12" "-f 12 -l2 1" "-f 12 -l2 0.1 -a 0.3" "-f 12 -l2 1 -a 0.3" "-f 12 -l2 0.1 -a 0.1"
            "-f 12 -l2 1 -a 0.1" "-f 10" "-f 10 -l2 0.01" "-f 10 -l2 0.001" "-f 10 -l2 0.01 -r 0.05")

quality_json=null
if [ "$quality" = 1 ]; then
evaluate() { # evaluate DIR MODEL_DIR OUT_JSON
    "$ROTOR" eval --model "$2" --input "$1/test" --top-k 10 --exclude "$1/base" --json >"$3"
}

# LIBMF's text model (header f m n k b, then "p<i> T|F v..." and "q<j> ...")
# as a rotor model directory scoring p_i . q_j (ids = LIBMF's indices).
cat >"$TMP/libmf2rotor.py" <<'PY'
import json, os, struct, sys
src, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
head, P, Q = {}, [], []
for line in open(src):
    f = line.split()
    if f[0] in ("f", "m", "n", "k", "b"):
        head[f[0]] = float(f[1])
    else:
        (P if f[0][0] == "p" else Q).append([float(x) for x in f[2:]])
k = int(head["k"])
def npy(name, rows):
    hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % (len(rows), k)
    hdr += " " * (63 - (len(hdr) + 10) % 64) + "\n"
    with open(os.path.join(out, name), "wb") as fp:
        fp.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
        for r in rows:
            fp.write(struct.pack("<%df" % k, *(r + [0.0] * (k - len(r)))))
npy("W.npy", P)
npy("H.npy", Q)
for name, n in (("rows.ids", len(P)), ("cols.ids", len(Q))):
    open(os.path.join(out, name), "w").write("".join("%d\n" % i for i in range(n)))
json.dump({"app": "sgd-mf", "k": k, "mu": 0.0, "biases": False}, open(os.path.join(out, "model.json"), "w"))
PY

# quality DATASET DESCRIPTION: the JSON object of one split in $TMP/DATASET
# (base, test): rotor (deterministic: once), LIBMF (R interleaved rounds).
quality() {
    local d=$TMP/$1 run name args r g first pop_p pop_n l12 l10 grid_json rotor_json
    awk '{ print $1, $2, 1 }' "$d/base" >"$d/base1"
    "$ROTOR" partition --input "$d/base" --test "$d/test" --nodes 1 --threads "$threads" \
        --seed 1 --out "$d/plan" >/dev/null 2>&1
    declare -A P10 N10
    for run in "${ROTOR_RUNS[@]}"; do
        name=${run%%|*} args=${run#*|}
        # shellcheck disable=SC2086
        "$ROTOR" train --plan "$d/plan" $args --out "$d/m-$name" >/dev/null 2>&1
        evaluate "$d" "$d/m-$name" "$d/e-$name.json"
        P10[$name]=$(jget "$d/e-$name.json" "['ranking']['model']['precision']")
        N10[$name]=$(jget "$d/e-$name.json" "['ranking']['model']['ndcg']")
    done
    first=${ROTOR_RUNS[0]%%|*}
    pop_p=$(jget "$d/e-$first.json" "['ranking']['most_popular']['precision']")
    pop_n=$(jget "$d/e-$first.json" "['ranking']['most_popular']['ndcg']")
    for r in $(seq 1 "$rounds"); do
        for g in $(seq 0 $((${#LIBMF_GRID[@]} - 1))); do
            # shellcheck disable=SC2086
            OMP_WAIT_POLICY=passive "$LIBMF_TRAIN" -k 32 -t "${ROTOR_BENCH_LIBMF_ITERS:-20}" -s "$threads" \
                ${LIBMF_GRID[$g]} --quiet "$d/base1" "$d/lm.txt" >/dev/null
            python3 "$TMP/libmf2rotor.py" "$d/lm.txt" "$d/lm"
            evaluate "$d" "$d/lm" "$d/lm.json"
            jget "$d/lm.json" "['ranking']['model']['precision']" >>"$d/lp-$g"
            jget "$d/lm.json" "['ranking']['model']['ndcg']" >>"$d/ln-$g"
        done
    done
    libmf_best() { # libmf_best LOSS -> "setting|p10|ndcg10" of the best by NDCG@10
        local best="" bn=-1 g p n
        for g in $(seq 0 $((${#LIBMF_GRID[@]} - 1))); do
            [[ "${LIBMF_GRID[$g]} " == "-f $1 "* ]] || continue
            p=$(median <"$d/lp-$g") n=$(median <"$d/ln-$g")
            if awk -v a="$n" -v b="$bn" 'BEGIN { exit !(a > b) }'; then best="${LIBMF_GRID[$g]}|$p|$n" bn=$n; fi
        done
        echo "$best"
    }
    l12=$(libmf_best 12) l10=$(libmf_best 10)
    grid_json=$(for g in $(seq 0 $((${#LIBMF_GRID[@]} - 1))); do
        printf '{"setting": "-k 32 -t %s %s", "precision_at_10": %s, "ndcg_at_10": %s}\n' \
            "${ROTOR_BENCH_LIBMF_ITERS:-20}" "${LIBMF_GRID[$g]}" "$(median <"$d/lp-$g")" "$(median <"$d/ln-$g")"
    done | paste -sd, -)
    rotor_json=$(for run in "${ROTOR_RUNS[@]}"; do
        name=${run%%|*}
        printf '"%s": {"train_args": "%s (defaults)", "precision_at_10": %s, "ndcg_at_10": %s}\n' \
            "$name" "${run#*|}" "${P10[$name]}" "${N10[$name]}"
    done | paste -sd, -)
    # The must-show: each implicit run with defaults above LIBMF's best of the
    # grid (either loss) by both precision@10 and NDCG@10.
    beats_json=$(for run in "${ROTOR_RUNS[@]}"; do
        name=${run%%|*}
        [[ $name == *-implicit ]] || continue
        awk -v n="$name" -v p="${P10[$name]}" -v g="${N10[$name]}" -v a="$l12" -v b="$l10" 'BEGIN {
            split(a, x, "|"); split(b, y, "|")
            bp = x[2] > y[2] ? x[2] : y[2]; bn = x[3] > y[3] ? x[3] : y[3]
            printf "\"%s\": %s\n", n, (p > bp && g > bn) ? "true" : "false" }'
    done | paste -sd, -)
    cat <<QJSON
{"dataset": "$2", "k": 10,
 "most_popular": {"precision_at_10": $pop_p, "ndcg_at_10": $pop_n},
 "rotor": {$rotor_json},
 "libmf_f12_best": {"setting": "-k 32 -t ${ROTOR_BENCH_LIBMF_ITERS:-20} ${l12%%|*}", "precision_at_10": $(echo "$l12" | cut -d'|' -f2), "ndcg_at_10": $(echo "$l12" | cut -d'|' -f3)},
 "libmf_f10_best": {"setting": "-k 32 -t ${ROTOR_BENCH_LIBMF_ITERS:-20} ${l10%%|*}", "precision_at_10": $(echo "$l10" | cut -d'|' -f2), "ndcg_at_10": $(echo "$l10" | cut -d'|' -f3)},
 "rotor_defaults_beat_libmf_best": {$beats_json},
 "libmf_grid": [$grid_json]}
QJSON
}

# ---- data: MovieLens 100K u1; FilmTrust, every fifth rating held out (fold 1
# of bench/quality.sh)
mkdir -p "$TMP/u1" "$TMP/filmtrust"
xz -dc "$DATA/ml-100k/u1.base.xz" | cut -f1-3 | tr '\t' ' ' >"$TMP/u1/base"
xz -dc "$DATA/ml-100k/u1.test.xz" | cut -f1-3 | tr '\t' ' ' >"$TMP/u1/test"
xz -dc "$DATA/filmtrust/ratings.txt.xz" | awk 'NR % 5 != 0 { print $1, $2, $3 }' >"$TMP/filmtrust/base"
xz -dc "$DATA/filmtrust/ratings.txt.xz" | awk 'NR % 5 == 0 { print $1, $2, $3 }' >"$TMP/filmtrust/test"
u1_json=$(quality u1 "MovieLens 100K u1 (u1.base train, u1.test relevant, training items excluded)")
ft_json=$(quality filmtrust "FilmTrust, rating n held out when n % 5 == 0 (1-based line numbers), training items excluded")
quality_json="{\"ml100k_u1\": $u1_json,
 \"filmtrust\": $ft_json}"
fi

# ---- throughput
tp_json=null
if [ "$throughput" = 1 ]; then
    "$ROTOR" gen mf --rows "$users" --cols "$items" --nnz $((users * 20)) --rank 8 --seed 5 --out "$TMP/big.txt" >/dev/null 2>&1
    "$ROTOR" partition --input "$TMP/big.txt" --nodes 1 --threads "$threads" --out "$TMP/bigplan" >/dev/null 2>&1
    "$ROTOR" train --plan "$TMP/bigplan" --app sgd-mf --rank 32 --epochs 1 --no-biases --no-center \
        --out "$TMP/bigm" >/dev/null 2>&1
    # single-file W.npy / H.npy for the baselines (rotor reads either form)
    "$ROTOR" export --model "$TMP/bigm" --out "$TMP/big" --format npy >/dev/null 2>&1
    rm -f "$TMP/big.txt"
    cc -O3 -std=c11 -D_GNU_SOURCE "$ROOT/bench/recommend_naive.c" -o "$TMP/naive"
    sgemm=0
    if pkg-config --exists openblas 2>/dev/null; then
        # shellcheck disable=SC2046
        cc -O3 -std=c11 -D_GNU_SOURCE -DWITH_CBLAS $(pkg-config --cflags openblas) \
            "$ROOT/bench/recommend_naive.c" -o "$TMP/sgemm" $(pkg-config --libs openblas) && sgemm=1
    fi
    # measure NAME CMD...: wall and CPU (user + sys) seconds, appended to $TMP/t-NAME
    measure() {
        local name=$1 TIMEFORMAT='%R %U %S' t; shift
        t=$( { time "$@" >/dev/null 2>&1; } 2>&1 )
        echo "$t" | awk '{ print $1 }' >>"$TMP/w-$name"
        echo "$t" | awk '{ print $2 + $3 }' >>"$TMP/c-$name"
    }
    for r in $(seq 1 "$rounds"); do
        measure excl "$ROTOR" recommend --model "$TMP/big" --top 32 --threads "$threads" --out -
        measure all "$ROTOR" recommend --model "$TMP/big" --top 32 --threads "$threads" --no-exclude --out -
        measure naive "$TMP/naive" naive "$TMP/big" 32 "$naive_users"
        [ "$sgemm" = 0 ] || measure sgemm "$TMP/sgemm" sgemm "$TMP/big" 32 "$users"
    done
    entry() { # entry NAME USERS: {"users", wall and CPU seconds (medians), users/s by each}
        local w c
        w=$(median <"$TMP/w-$1") c=$(median <"$TMP/c-$1")
        printf '{"users": %s, "wall_s": %s, "cpu_s": %s, "users_per_wall_s": %.1f, "users_per_cpu_s": %.1f}' \
            "$2" "$w" "$c" "$(echo "$2 / $w" | bc -l)" "$(echo "$2 / $c" | bc -l)"
    }
    sg=null
    [ "$sgemm" = 0 ] || sg=$(entry sgemm "$users")
    ratio() { echo "($2 / $(median <"$TMP/c-$1")) / ($naive_users / $(median <"$TMP/c-naive"))" | bc -l | xargs printf '%.1f'; }
    tp_json=$(cat <<TJSON
{"users": $users, "items": $items, "k": 32, "top": 32, "threads": $threads, "rounds": $rounds,
  "note": "times of whole commands (model load included), medians; CPU = user + sys over all threads",
  "rotor_recommend_excluding_plan": $(entry excl "$users"),
  "rotor_recommend_no_exclude": $(entry all "$users"),
  "naive_per_user_loop": $(entry naive "$naive_users"),
  "openblas_sgemm_blocks_no_exclude": $sg,
  "cpu_speedup_over_naive": $(ratio all "$users")}
TJSON
)
fi

cat <<JSON
{"bench": "ranking", "rounds": $rounds, "threads": $threads,
 "load_start": "$load_start", "load_end": "$(cut -d' ' -f1-3 /proc/loadavg)",
 "quality": $quality_json,
 "recommend_throughput": $tp_json}
JSON
