#!/usr/bin/env bash
# lda_ab.sh - interleaved timed A/B of two rotor builds on the same LDA
# corpus and plan; prints one JSON line per (corpus, K).
#
#   bench/lda_ab.sh --a BIN_A --b BIN_B [--corpora kos,ap,synthetic]
#                   [--topics 1000] [--threads 2] [--iters 50] [--rounds 6]
#                   [--sampler auto] [--states every|first] [--keep DIR [--prepare]]
#
# The corpora are bench/lda.sh's (lib.sh: lda_corpus, the same generator and
# files) and each one's plan (one process x T workers) is made once, by
# BIN_A, and trained by both; every run is lda.sh's `rotor train` (lib.sh:
# lda_train: alpha 50/K, beta 0.01, seed 1, --sampler as lda.sh's
# --samplers entries: NAME, NAME:M, NAME+exact, NAME+afterWxN).  Each round
# runs A then B, the order alternating between rounds (round 1 A B, round 2
# B A, ...), and each run's throughput is lda.sh's: tokens/s over the second
# half of the iterations (26-50 for --iters 50), from the metrics record of
# the last iteration (bench/lda_metrics.py). Per round the ratio B/A; the
# median of those ratios is the A/B figure (paired: a round's two runs saw
# about the same load; an even count of rounds puts each build first equally
# often: in an A/A run, the same binary twice, 5 rounds, bench lock, load
# 3-5, AP K = 1000's B/A was 1.059 and 1.082 in the rounds where B ran
# first, 0.989-1.039 in the others; KOS 0.956-1.004).
# Every run saves its state (--out, after the timed sweeps) and the JSON
# gives each run's state checksum (sha256 over the model's part and side
# files, model.json left out: it records timings) and bit_identical: true
# when every run of A and of B saved the same state, false when two differ,
# null when a state is missing (a run that saves nothing stops the script
# first).  --states first: only round 1's runs save (a K = 10000 model is
# 0.3-0.4 GB of counts to write per run; the state_sha256 of the other
# rounds is null).  A corpus whose data is absent is skipped with a message;
# one that fails to be made, or its plan, stops the script (exit 2).
# Time it under the bench lock, e.g.
#   flock /tmp/rotor-bench.lock bash -c 'echo -20 > /proc/$$/autogroup; exec nice -n -20 \
#       bench/lda_ab.sh --a /work/main/build/tools/rotor --b build/tools/rotor --corpora kos,ap'
# JSON line fields: "benchmark" ("lda_ab"), "corpus", "topics", "sampler",
# "threads", "iters", "throughput_window", "rounds", "order_rounds" ("ab" or
# "ba"), "ratio_rounds", "median_ratio" (B/A tokens/s), "median_ratio_ab" and
# "median_ratio_ba" (over the rounds of each order: their gap is the order's
# effect), "bit_identical",
# "a" and "b" ({"bin", "version", "tokens_per_s_rounds",
# "median_tokens_per_s", "peak_rss_bytes_rounds", "median_peak_rss_bytes",
# "state_sha256_rounds"}), "cpus", "loadavg_before", "loadavg_after".
# stderr gets one summary line per (corpus, K).  --keep DIR: the scratch
# directory (corpora, plans, logs, metrics) is DIR and is kept; corpora and
# plans already in DIR are reused, so a second A/B on it skips making them;
# --prepare makes them and exits (outside the bench lock: the synthetic
# corpus takes a minute to generate), e.g.
#   bench/lda_ab.sh --a BIN_A --b BIN_B --keep /tmp/ab --prepare
set -euo pipefail
source "$(dirname "$0")/lib.sh"
a="" b="" corpora=kos,ap,synthetic topics=1000 threads=2 iters=50 rounds=6 sampler=auto keep=""
states=every prepare=0
BENCH_FLAGS=([prepare]=prepare=1)
bench_options 2,48 "$@"
[ -n "$a" ] && [ -n "$b" ] || bench_fail "needs --a BIN_A and --b BIN_B (see --help)"
for bin in "$a" "$b"; do [ -x "$bin" ] && [ -f "$bin" ] || bench_fail "not an executable: $bin"; done
a=$(realpath "$a") b=$(realpath "$b")
[[ $iters =~ ^[1-9][0-9]*$ ]] && [ $((iters % 2)) = 0 ] || bench_fail "--iters must be even, not $iters"
[[ $rounds =~ ^[1-9][0-9]*$ ]] || bench_fail "--rounds is a count, not $rounds"
[[ $threads =~ ^[1-9][0-9]*$ ]] || bench_fail "--threads is a count, not $threads"
case $states in every | first) ;; *) bench_fail "--states is every or first, not $states" ;; esac
[ "$prepare" = 0 ] || [ -n "$keep" ] || bench_fail "--prepare needs --keep DIR"
command -v python3 >/dev/null || bench_fail "needs python3"
[ -x /usr/bin/time ] || bench_fail "needs GNU time (Debian package time)"
if [ -n "$keep" ]; then TMP=$keep && mkdir -p "$TMP"; else TMP=$(mktemp -d) && trap 'rm -rf "$TMP"' EXIT; fi
TMP=$(realpath "$TMP")
mkdir -p "$TMP/runs"
tool=$(lda_tool "$sampler")

# state_sha256 MODEL: one digest of a saved model's parts and side files;
# fails when MODEL is missing or holds none (a run that saved nothing must
# not count as a state equal to the others).
state_sha256() {
    local -
    set -o pipefail # (ab_run's caller is on the left of &&: errexit is off)
    [ -n "$(cd "$1" && find . -type f ! -name model.json -print -quit)" ] || return 1
    (cd "$1" && find . -type f ! -name model.json -print0 | LC_ALL=C sort -z |
        xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
}

# ab_run WHICH BIN CORPUS K ROUND: one timed run; its state's digest in
# BASE.sha256 (empty when --states first spares it), the model removed.
ab_run() {
    local which=$1 bin=$2 c=$3 K=$4 r=$5 base=$TMP/runs/$3-$4-$1-$5 model=()
    echo "lda_ab.sh: $c K=$K round $r $which" >&2
    rm -rf "$base.model" "$base.sha256"
    [ "$states" = every ] || [ "$r" = 1 ] && model=("$base.model")
    ROTOR=$bin lda_train "$tool" "$TMP/plan-$c-t$threads" "$K" "$iters" $((iters / 2)) "$threads" \
        "$base" "${model[@]}" || bench_fail "$which ($bin) failed: see $base.log: $(tail -n 3 "$base.log")"
    : >"$base.sha256"
    [ ${#model[@]} = 0 ] || state_sha256 "$base.model" >"$base.sha256" ||
        bench_fail "$which ($bin) saved no state in $base.model: see $base.log"
    rm -rf "$base.model"
}

made=()
for c in ${corpora//,/ }; do
    f=$TMP/$c.txt plan=$TMP/plan-$c-t$threads
    if [ ! -s "$f" ]; then
        ROTOR=$a lda_corpus "$c" "$f.part" || continue # data absent (it said so); a failure exits
        mv "$f.part" "$f"
    fi
    if [ ! -d "$plan" ]; then
        ROTOR=$a lda_plan "$f" "$threads" "" "$plan.part" || bench_fail "plan for $c failed ($a partition)"
        mv "$plan.part" "$plan"
    fi
    made+=("$c")
done
[ ${#made[@]} -gt 0 ] || bench_fail "no corpus to run (--corpora $corpora)"
if [ "$prepare" = 1 ]; then
    echo "lda_ab.sh: corpora and plans for ${made[*]} ($threads threads) in $TMP" >&2
    exit 0
fi

for c in "${made[@]}"; do
    for K in ${topics//,/ }; do
        load_before=$(cat /proc/loadavg)
        for r in $(seq 1 "$rounds"); do
            if [ $((r % 2)) = 1 ]; then
                ab_run a "$a" "$c" "$K" "$r" && ab_run b "$b" "$c" "$K" "$r"
            else
                ab_run b "$b" "$c" "$K" "$r" && ab_run a "$a" "$c" "$K" "$r"
            fi
        done
        PYTHONPATH=$ROOT/bench python3 - "$TMP/runs" "$c" "$K" "$sampler" "$threads" "$iters" "$rounds" "$a" "$b" \
            "$("$a" --version | head -n 1)" "$("$b" --version | head -n 1)" "$(nproc)" \
            "$load_before" "$(cat /proc/loadavg)" "$states" <<'EOF'
import json, statistics, sys
from lda_metrics import window_tokens_per_s
runs, c, K, sampler = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
threads, iters, rounds = int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
bins, versions = {"a": sys.argv[8], "b": sys.argv[9]}, {"a": sys.argv[10], "b": sys.argv[11]}

def read(path):
    with open(path) as f:
        return f.read()

def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None

side = {}
for w in "ab":
    bases = [f"{runs}/{c}-{K}-{w}-{r}" for r in range(1, rounds + 1)]
    tp = [window_tokens_per_s(b + ".metrics", iters) for b in bases]
    rss = [int(read(b + ".time").split()[-2]) * 1024 for b in bases]
    side[w] = {"bin": bins[w], "version": versions[w], "tokens_per_s_rounds": tp,
               "median_tokens_per_s": med(tp), "peak_rss_bytes_rounds": rss,
               "median_peak_rss_bytes": med(rss),
               "state_sha256_rounds": [read(b + ".sha256").strip() or None for b in bases]}
ratios = [y / x if x and y else None for x, y in zip(side["a"]["tokens_per_s_rounds"], side["b"]["tokens_per_s_rounds"])]
# Same bits only when every run meant to save a state did (2 per round with
# --states every, round 1's two with first) and all those states are one:
# a missing digest makes it unknown (null), never a pass.
saved = [d for w in "ab" for d in side[w]["state_sha256_rounds"] if d]
expected = 2 * rounds if sys.argv[15] == "every" else 2
same = None if len(saved) != expected else len(set(saved)) == 1
row = {"benchmark": "lda_ab", "corpus": c, "topics": K, "sampler": sampler, "threads": threads,
       "iters": iters, "throughput_window": [iters // 2 + 1, iters], "rounds": rounds,
       "order_rounds": ["ab" if r % 2 else "ba" for r in range(1, rounds + 1)],
       "ratio_rounds": ratios, "median_ratio": med(ratios),
       "median_ratio_ab": med(ratios[0::2]), "median_ratio_ba": med(ratios[1::2]),
       "bit_identical": same,
       "a": side["a"], "b": side["b"], "cpus": int(sys.argv[12]),
       "loadavg_before": sys.argv[13], "loadavg_after": sys.argv[14]}
print(json.dumps(row))
bits = ("same bits" if same else "states DIFFER" if same is False
        else f"bits UNKNOWN ({len(saved)} of {expected} states saved)")
m = lambda v: "-" if v is None else f"{v / 1e6:.2f}M"
f = lambda v: "-" if v is None else f"{v:.3f}"
print(f"lda_ab.sh: {c} K={K}: A {m(side['a']['median_tokens_per_s'])} B {m(side['b']['median_tokens_per_s'])}"
      f" tokens/s; B/A median {f(row['median_ratio'])} ({' '.join(f(x) for x in ratios)});"
      f" {bits}; load {sys.argv[13].split()[0]}"
      f" -> {sys.argv[14].split()[0]}", file=sys.stderr)
EOF
    done
done
