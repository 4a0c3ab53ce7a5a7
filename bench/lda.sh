#!/usr/bin/env bash
# lda.sh - rotor LDA next to WarpLDA on the same corpus files; prints JSON.
#
#   bench/lda.sh [--quick] [--corpora synthetic,kos,ap] [--topics 100,1000,10000]
#                [--samplers warp,mh:4,sparse] [--threads T] [--iters N] [--rounds R]
#                [--ll-iters 10,20,...] [--warplda-wait passive|active]
#                [--no-warplda] [--keep DIR] [--pipeline C]
#
# Corpora (each written once in the Yahoo!LDA line format, "doc doc w w ...",
# and read by both tools from that file): synthetic = `rotor gen lda`, 20k
# documents x 20k words, ~4M tokens from 100 planted topics; kos = UCI KOS
# and ap = Blei's AP from ../shared/data (skipped when absent).  Every
# (corpus, K) runs with alpha = 50/K, beta = 0.01, T threads (rotor: one
# process x T workers; WarpLDA: OMP_NUM_THREADS=T), N iterations:
#
#  * throughput: R interleaved rounds (the tool order alternates between
#    rounds); tokens/s over the second half of the iterations (26-50 for
#    N = 50) and peak RSS (GNU time) of every run; medians over the rounds,
#    and the median of the per-round ratios to WarpLDA.
#  * convergence: one run per iteration count in --ll-iters that saves its
#    state (rotor --out, WarpLDA --dumpz); bench/lda_ll.c, one evaluator
#    for both, turns each state into the Griffiths & Steyvers log-likelihood
#    per token.  Each point carries the sampling seconds up to it (rotor:
#    model.json sample_seconds; WarpLDA: the sum of its per-iteration
#    times), which gives the log-likelihood at fixed wall times (0.25, 0.5
#    and 1 x WarpLDA's time for N iterations, linear between points) and the
#    time each rotor sampler needs to reach WarpLDA's N-iteration value.
#    WarpLDA seeds its threads' generators in a racy order, so its points
#    are separate chains; rotor's runs are prefixes of one chain.
#
# WarpLDA's OpenMP threads wait passively by default (OMP_WAIT_POLICY): on
# a machine shared with other work, spinning at its barriers halved its
# speed (KOS, K = 100, load average 14 on 2 cores: 1.2-1.5M tokens/s
# active, 2.3-3.0M passive).
# --samplers: NAME, NAME:M (--mh-steps M), NAME+exact (--exact-sweeps
# for every sweep: exact collapsed Gibbs) or NAME+afterWxN (--exact-after W
# --exact-sweeps N: sweeps W+1 .. W+N exact), reported as
# rotor-NAME[-mM][-exact|-afterWxN];
# NAME auto is rotor's default (sparse at K <= 384 and above 512, warp between).
# rotor's sampling seconds include rotation 0 (the initial topics).
# rotor's split_median: where the wall of the throughput window's sweeps
# went besides the cells (medians over the rounds): imbalance_frac (threads
# idle while the slowest cell of a step finishes), handover_frac (waking the
# threads) and step_end_frac (the topic-total exchange), each a fraction of
# the sweeps' wall.
# --pipeline C: rotor's plans get C column blocks per worker (rotor
# partition --pipeline; default its own): a run's blocks are smaller or larger
# for the cache at the cost of more or fewer steps.
# --quick: KOS only, K = 100 and 1000, 20 iterations, 1 round, 2 points.
# --keep DIR: the scratch directory (corpora, plans, runs' logs and
# metrics) is DIR and is kept; a later run in DIR makes them all again.
# WarpLDA is built by ../shared/anchors/build.sh (into $ANCHORS_DIR, default
# /tmp/rotor-anchors) unless WARPLDA=path/to/warplda and WARPLDA_FORMAT are
# set.  The load average of the machine is recorded before and after.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
corpora=synthetic,kos,ap topics=100,1000,10000 samplers=warp,mh,sparse threads=2 iters=50 rounds=3
ll_iters=10,20,30,40,50 warp=1 keep="" warplda_wait=passive pipeline=
BENCH_FLAGS=([quick]="corpora=kos topics=100,1000 iters=20 rounds=1 ll_iters=10,20"
             [no-warplda]=warp=0)
bench_options 2,54 "$@"
[ -x "$ROTOR" ] || bench_fail "build first (cmake --build build)"
[ $((iters % 2)) = 0 ] || bench_fail "--iters must be even"
command -v python3 >/dev/null || bench_fail "needs python3"
[ -x /usr/bin/time ] || bench_fail "needs GNU time (Debian package time)"
if [ -n "$keep" ]; then TMP=$keep && mkdir -p "$TMP"; else TMP=$(mktemp -d) && trap 'rm -rf "$TMP"' EXIT; fi
mkdir -p "$TMP/runs"
load_before=$(cat /proc/loadavg)

cc -O2 -o "$TMP/lda_ll" "$ROOT/bench/lda_ll.c" -lm

if [ "$warp" = 1 ] && [ -z "${WARPLDA:-}" ]; then
    if out=$("$ROOT/../shared/anchors/build.sh" "${ANCHORS_DIR:-/tmp/rotor-anchors}" 2>&1); then
        eval "$(echo "$out" | grep -E '^WARPLDA(_FORMAT)?=')"
    fi
fi
if [ "$warp" = 1 ] && [ ! -x "${WARPLDA:-}" ]; then
    echo "lda.sh: WarpLDA not available; rotor only" >&2
    warp=0
fi

# ---- corpora, in the line format both tools read (lib.sh: lda_corpus)
made=()
for c in ${corpora//,/ }; do
    f=$TMP/$c.txt
    lda_corpus "$c" "$f" || continue
    lda_plan "$f" "$threads" "$pipeline" "$TMP/plan-$c"
    if [ "$warp" = 1 ]; then
        rm -f "$TMP/w-$c".* # a --keep DIR's earlier run's: made again from this corpus, as the plan is
        (cd "$TMP" && "$WARPLDA_FORMAT" -input "$f" -prefix "$TMP/w-$c" >&2)
    fi
    made+=("$c")
done

tools=()
[ "$warp" = 1 ] && tools+=(warplda)
for s in ${samplers//,/ }; do # NAME:M = --mh-steps M, NAME+exact = every sweep exact
    tools+=("$(lda_tool "$s")")
done

# run TOOL CORPUS K ITERS TAG [save]: one run; GNU time writes "peak_kB seconds"
run() {
    local tool=$1 c=$2 K=$3 n=$4 tag=$5 save=${6:-}
    local base=$TMP/runs/$tag alpha
    alpha=$(awk -v k="$K" 'BEGIN { printf "%.10g", 50 / k }')
    if [ "$tool" = warplda ]; then
        local z=(--dumpz=false)
        [ -n "$save" ] && z=(--z "$base.z") # (--z turns --dumpz on)
        (cd "$TMP/runs" && OMP_NUM_THREADS=$threads OMP_WAIT_POLICY=$warplda_wait /usr/bin/time -f "%M %e" -o "$base.time" \
            "$WARPLDA" --prefix "$TMP/w-$c" --k "$K" --alpha 50 --beta 0.01 --niter "$n" \
            --dumpmodel=false --writeinfo=false "${z[@]}" >"$base.log" 2>&1)
        if [ -n "$save" ]; then
            "$TMP/lda_ll" --alpha "$alpha" --beta 0.01 --topics "$K" --warplda-z "$base.z" >"$base.ll"
            rm -f "$base.z"
        fi
    else
        local model=() every=$((n / 2))
        [ -n "$save" ] && model=("$base.model") every=$n
        lda_train "$tool" "$TMP/plan-$c" "$K" "$n" "$every" "$threads" "$base" "${model[@]}"
        if [ -n "$save" ]; then
            # (the saved model is per-rank parts; lda_ll reads the merged files)
            "$ROTOR" export --quiet --model "$base.model" --out "$base.model.npy" >&2
            "$TMP/lda_ll" --alpha "$alpha" --beta 0.01 --topics "$K" --rotor-model "$base.model.npy" \
                >"$base.ll"
            cp "$base.model.npy/model.json" "$base.model.json"
            rm -rf "$base.model" "$base.model.npy"
        fi
    fi
}

for c in "${made[@]}"; do
    for K in ${topics//,/ }; do
        for r in $(seq 1 "$rounds"); do
            order=("${tools[@]}")
            if [ $((r % 2)) = 0 ]; then
                order=()
                for ((i = ${#tools[@]} - 1; i >= 0; i--)); do order+=("${tools[i]}"); done
            fi
            for t in "${order[@]}"; do
                echo "lda.sh: $c K=$K round $r $t" >&2
                run "$t" "$c" "$K" "$iters" "time-$c-$K-$t-$r"
            done
        done
        for n in ${ll_iters//,/ }; do
            for t in "${tools[@]}"; do
                echo "lda.sh: $c K=$K state after $n iterations: $t" >&2
                run "$t" "$c" "$K" "$n" "ll-$c-$K-$t-$n" save
            done
        done
    done
done

load_after=$(cat /proc/loadavg)
PYTHONPATH=$ROOT/bench python3 - "$TMP/runs" "$iters" "$rounds" "$threads" "$ll_iters" "$load_before" "$load_after" \
    "$(nproc)" "${made[*]}" "$topics" "${tools[*]}" "$warplda_wait" "${pipeline:-default}" <<'EOF'
import json, os, re, statistics, sys
from lda_metrics import window_record, window_tokens_per_s
runs, iters, rounds, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
ll_iters = [int(x) for x in sys.argv[5].split(",")]
corpora, topics, tools = sys.argv[9].split(), [int(k) for k in sys.argv[10].split(",")], sys.argv[11].split()
half = iters // 2

def read(path):
    with open(path) as f:
        return f.read()

def peak_and_wall(tag):
    kb, sec = read(f"{runs}/{tag}.time").split()[-2:]
    return int(kb) * 1024, float(sec)

def warp_times(tag):
    """Per-iteration seconds and the token count from WarpLDA's log."""
    its = [float(m.group(1)) for m in re.finditer(r"^Iteration \d+, ([0-9.]+) s", read(f"{runs}/{tag}.log"), re.M)]
    return its

def tokens_of(c):
    m = json.loads(read(f"{runs}/ll-{c}-{topics[0]}-{tools[-1]}-{ll_iters[-1]}.ll"))
    return m["tokens"]

def throughput(tool, c, K, r):
    tag = f"time-{c}-{K}-{tool}-{r}"
    if tool == "warplda":
        its = warp_times(tag)
        if len(its) < iters:
            return None
        return tokens[c] * half / sum(its[half:iters])
    return window_tokens_per_s(f"{runs}/{tag}.metrics", iters)

def step_split(tool, c, K, r):
    """rotor: the window's wall beyond its cells (engine.h rt_rotation_stats), as
    fractions of it: uneven cells, thread hand-overs, the topic-total exchange."""
    rec = window_record(f"{runs}/time-{c}-{K}-{tool}-{r}.metrics", iters)
    return {k: rec.get(k) for k in SPLIT} if rec else {}

SPLIT = ("imbalance_frac", "handover_frac", "step_end_frac")

def curve(tool, c, K):
    pts = []
    for n in ll_iters:
        tag = f"ll-{c}-{K}-{tool}-{n}"
        ll = json.loads(read(f"{runs}/{tag}.ll"))
        if tool == "warplda":
            sec = sum(warp_times(tag)[:n])
            own = None
        else:
            mj = json.loads(read(f"{runs}/{tag}.model.json"))
            sec, own = mj["sample_seconds"], mj["ll_per_token"]
        p = {"iter": n, "seconds": round(sec, 4), "ll_per_token": ll["ll_per_token"]}
        if own is not None:
            p["own_ll_per_token"] = own  # rotor's in-run value, for checking the evaluator
        pts.append(p)
    return pts

def at_time(pts, t):
    """Log-likelihood at wall time t, linear between points; None before the first."""
    prev = None
    for p in pts:
        if p["seconds"] >= t:
            if prev is None:
                return None
            f = (t - prev["seconds"]) / (p["seconds"] - prev["seconds"])
            return prev["ll_per_token"] + f * (p["ll_per_token"] - prev["ll_per_token"])
        prev = p
    return pts[-1]["ll_per_token"] if pts else None

def time_to(pts, target):
    prev = None
    for p in pts:
        if p["ll_per_token"] >= target:
            if prev is None:
                return p["seconds"]
            f = (target - prev["ll_per_token"]) / (p["ll_per_token"] - prev["ll_per_token"])
            return prev["seconds"] + f * (p["seconds"] - prev["seconds"])
        prev = p
    return None

def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None

tokens = {c: tokens_of(c) for c in corpora}
results = []
for c in corpora:
    for K in topics:
        tp = {t: [throughput(t, c, K, r) for r in range(1, rounds + 1)] for t in tools}
        pw = {t: [peak_and_wall(f"time-{c}-{K}-{t}-{r}") for r in range(1, rounds + 1)] for t in tools}
        cv = {t: curve(t, c, K) for t in tools}
        w = cv.get("warplda")
        wt = w[-1]["seconds"] if w else None
        row = {"corpus": c, "topics": K, "alpha": 50 / K, "beta": 0.01, "tokens": tokens[c], "tools": {}}
        for t in tools:
            d = {"tokens_per_s_rounds": tp[t], "median_tokens_per_s": med(tp[t]),
                 "peak_rss_bytes_rounds": [p for p, _ in pw[t]], "median_peak_rss_bytes": med([p for p, _ in pw[t]]),
                 "median_process_seconds": med([s for _, s in pw[t]]), "ll_curve": cv[t]}
            if t != "warplda":
                sp = [step_split(t, c, K, r) for r in range(1, rounds + 1)]
                d["split_median"] = {k: med([x.get(k) for x in sp]) for k in SPLIT}
            if w and t != "warplda":
                d["tokens_per_s_ratio_to_warplda"] = med([a / b if a and b else None for a, b in zip(tp[t], tp["warplda"])])
                d["peak_rss_ratio_to_warplda"] = med([a[0] / b[0] for a, b in zip(pw[t], pw["warplda"])])
                tt = time_to(cv[t], w[-1]["ll_per_token"])
                d["seconds_to_warplda_final_ll"] = tt
                d["time_ratio_to_warplda_final_ll"] = tt / wt if tt is not None and wt else None
            if wt:
                d["ll_per_token_at_warplda_time_fraction"] = {str(f): at_time(cv[t], f * wt) for f in (0.25, 0.5, 1.0)}
            row["tools"][t] = d
        results.append(row)
print(json.dumps({"benchmark": "lda", "config": {"threads": threads, "iters": iters, "rounds": rounds,
                  "ll_iters": ll_iters, "throughput_window": [half + 1, iters], "cpus": int(sys.argv[8]),
                  "loadavg_before": sys.argv[6], "loadavg_after": sys.argv[7],
                  "warplda_omp_wait_policy": sys.argv[12], "pipeline": sys.argv[13]},
                  "results": results}, indent=1))
EOF
