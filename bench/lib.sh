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
