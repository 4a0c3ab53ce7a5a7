# lib.sh - what the benchmark scripts share; source it first:
#   source "$(dirname "$0")/lib.sh"
# It sets ROOT (the source tree) and ROTOR (the binary, unless the caller
# set it) and defines the helpers below.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROTOR=${ROTOR:-$ROOT/build/tools/rotor}
# Options that take no value: name -> the "variable=value" assignments they
# make, separated by spaces (see bench_options); a script fills it before
# calling bench_options.
declare -A BENCH_FLAGS=()

bench_fail() {
    echo "$(basename "$0"): $*" >&2
    exit 2
}

# bench_options LINES "$@": the script's command line.  Every "--some-name
# VALUE" sets $some_name, which the script must have given its default
# before (so a misspelt option is refused, not ignored); the options named
# in BENCH_FLAGS take no value and make their assignments where they stand
# (a later option overrides them); -h/--help prints the script's lines LINES
# (its header comment, as "2,20").
bench_options() {
    local lines=$1 name var
    shift
    while [ $# -gt 0 ]; do
        case $1 in
        -h | --help) sed -n "${lines}p" "$0"; exit 0 ;;
        --?*) name=${1#--} ;;
        *) bench_fail "unknown option $1" ;;
        esac
        if [ -n "${BENCH_FLAGS[$name]+x}" ]; then
            for var in ${BENCH_FLAGS[$name]}; do
                printf -v "${var%%=*}" %s "${var#*=}"
            done
        else
            var=${name//-/_}
            [[ $var =~ ^[a-z][a-z0-9_]*$ ]] && [ -n "${!var+x}" ] || bench_fail "unknown option $1"
            [ $# -ge 2 ] || bench_fail "$1 needs a value"
            printf -v "$var" %s "$2"
            shift
        fi
        shift
    done
}

# The rotor binary must exist; then a scratch directory $TMP, removed on exit.
bench_start() {
    [ -x "$ROTOR" ] || bench_fail "build first: tools/run.sh build (no $ROTOR)"
    TMP=$(mktemp -d) && trap 'rm -rf "$TMP"' EXIT
}

# median [EMPTY]: the median of the numbers on standard input (the mean of
# the middle two for an even count); EMPTY (default null) when there are none.
median() {
    sort -g | awk -v empty="${1:-null}" '{a[NR] = $1}
        END {print NR ? ((NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) : empty}'
}

# field NAME FILE: every number that follows "NAME": in a JSON file.
field() { grep -o "\"$1\": [-0-9.e+]*" "$2" | awk '{print $2}' || true; }

# bench_mf_data ML100K PARTITION-OPTIONS...: training and test ratings in
# $TMP/train.txt and $TMP/test.txt (MovieLens 100K u1 when ML100K is 1, else
# planted data of $rows x $cols with $nnz ratings of rank $true_rank), and
# their plan for $procs processes x $threads threads in $TMP/plan.
bench_mf_data() {
    local ml100k=$1 data
    shift
    if [ "$ml100k" = 1 ]; then
        data=${ROTOR_DATA_DIR:-$ROOT/../shared/data}/ml-100k
        xz -dc "$data/u1.base.xz" >"$TMP/train.txt"
        xz -dc "$data/u1.test.xz" >"$TMP/test.txt"
    else
        "$ROTOR" gen mf --rows "$rows" --cols "$cols" --nnz "$nnz" --rank "$true_rank" \
            --noise 0.1 --seed 1 --out "$TMP/train.txt" --test-out "$TMP/test.txt" \
            --test-fraction 0.05 >/dev/null 2>&1
    fi
    "$ROTOR" partition --input "$TMP/train.txt" --test "$TMP/test.txt" --nodes "$procs" \
        --threads "$threads" --seed 1 --out "$TMP/plan" "$@" >/dev/null 2>&1
}

# ---- LDA: what bench/lda.sh and bench/lda_ab.sh share, so that an A/B of two
# builds runs the same corpora, plans and command as the WarpLDA comparison.

# lda_corpus NAME FILE: corpus NAME in the line format ("doc doc w w ...")
# in FILE: synthetic = `rotor gen lda`, 20k documents x 20k words, ~4M
# tokens from 100 planted topics; kos = UCI KOS and ap = Blei's AP from
# $ROTOR_DATA_DIR (default ../shared/data).  Returns 1, with a message, only
# when the data set is absent (the caller skips it); exits 2 when making it
# fails (rotor gen, a corrupt .xz, awk, a full disk: a skipped corpus would
# go unnoticed in a table) and on an unknown NAME.
lda_corpus() {
    local - c=$1 f=$2 data=${ROTOR_DATA_DIR:-$ROOT/../shared/data}
    set -o pipefail # (the caller's `|| continue` turns errexit off in here)
    case $c in
    synthetic)
        "$ROTOR" gen lda --docs 20000 --vocab 20000 --topics 100 --alpha 0.1 --beta 0.01 \
            --doc-len 200 --seed 1 --out "$f.uci" >&2 || bench_fail "synthetic: rotor gen lda failed ($ROTOR)"
        lda_uci_to_lines <"$f.uci" >"$f" || bench_fail "synthetic: converting $f.uci failed"
        rm -f "$f.uci" "$f.uci".* ;;
    kos)
        [ -f "$data/uci-kos/docword.kos.txt.xz" ] || { echo "$(basename "$0"): no KOS, skipped" >&2; return 1; }
        xz -dc "$data/uci-kos/docword.kos.txt.xz" | lda_uci_to_lines >"$f" ||
            bench_fail "kos: reading $data/uci-kos/docword.kos.txt.xz failed" ;;
    ap)
        [ -f "$data/ap/ap.dat.xz" ] || { echo "$(basename "$0"): no AP, skipped" >&2; return 1; }
        xz -dc "$data/ap/ap.dat.xz" | lda_ldac_to_lines >"$f" || bench_fail "ap: reading $data/ap/ap.dat.xz failed" ;;
    *) bench_fail "unknown corpus $c" ;;
    esac
}
lda_uci_to_lines() { awk 'NR > 3 { if ($1 != d) { if (NR > 4) print ""; d = $1; printf "%s %s", d, d }
                                   for (i = 0; i < $3; i++) printf " w%s", $2 } END { print "" }'; }
lda_ldac_to_lines() { awk '{ printf "%d %d", NR, NR; for (i = 2; i <= NF; i++) { split($i, p, ":")
                             for (j = 0; j < p[2]; j++) printf " w%s", p[1] } print "" }'; }

# lda_plan CORPUS-FILE THREADS PIPELINE PLAN: the one-process plan of T
# workers (PIPELINE empty: partition's default column blocks per worker),
# made anew: an earlier or interrupted run's PLAN is removed first
# (partition refuses an existing --out).
lda_plan() {
    rm -rf "$4"
    "$ROTOR" partition --app lda --format lines --input "$1" --nodes 1 --threads "$2" \
        ${3:+--pipeline "$3"} --test-fraction 0 --seed 1 --out "$4" >&2
}

# lda_tool SPEC: the tool name of a --samplers entry: NAME, NAME:M (--mh-steps
# M), NAME+exact (every sweep exact), NAME+afterWxN (sweeps W+1 .. W+N exact)
# -> rotor-NAME[-mM][-exact|-afterWxN].
lda_tool() {
    local s=${1/+exact/-exact}
    s=${s/+after/-after}
    echo "rotor-${s/:/-m}"
}

# lda_train TOOL PLAN K ITERS EVERY THREADS BASE [MODEL]: one `rotor train`
# of sampler TOOL (lda_tool's name) with alpha 50/K, beta 0.01, seed 1,
# under GNU time ("peak_kB seconds" in BASE.time), metrics in BASE.metrics
# (an evaluation every EVERY sweeps: the record of sweep ITERS then holds
# the tokens/s of sweeps ITERS-EVERY+1 .. ITERS), its output in BASE.log,
# and the state saved in MODEL when given.
lda_train() {
    local sampler=${1#rotor-} plan=$2 K=$3 n=$4 every=$5 threads=$6 base=$7 out=() steps=() alpha
    [ -n "${8:-}" ] && out=(--out "$8")
    alpha=$(awk -v k="$K" 'BEGIN { printf "%.10g", 50 / k }')
    case $sampler in *-exact) steps=(--exact-sweeps "$n") sampler=${sampler%-exact} ;; esac
    case $sampler in *-after*x*) # -afterWxN
        local win=${sampler##*-after}
        steps=(--exact-after "${win%x*}" --exact-sweeps "${win#*x}") sampler=${sampler%-after*} ;;
    esac
    case $sampler in *-m*) steps+=(--mh-steps "${sampler##*-m}") sampler=${sampler%-m*} ;; esac
    /usr/bin/time -f "%M %e" -o "$base.time" "$ROTOR" train --plan "$plan" --app lda \
        --threads "$threads" --sampler "$sampler" "${steps[@]}" --topics "$K" --alpha "$alpha" \
        --beta 0.01 --iters "$n" --eval-every "$every" --seed 1 \
        --metrics "$base.metrics" "${out[@]}" >"$base.log" 2>&1
}
