# lib.sh - helpers for rotor's end-to-end tests (sourced by tests/e2e/*.sh).
# ctest sets ROTOR (the binary), ROTOR_DATA_DIR, ROTOR_SRC, ROTOR_BUILD.
set -euo pipefail

: "${ROTOR:?ROTOR must point at the rotor binary}"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/rotor-e2e.XXXXXX")
cleanup() {
    local pids
    pids=$(jobs -p)
    [ -n "$pids" ] && kill $pids 2>/dev/null || true
    rm -rf "$TMP"
}
trap cleanup EXIT
# Ranks started by hand (not by rotor launch) share this job secret.
export ROTOR_TOKEN=rotor-e2e-test-secret

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*" >&2; exit 77; }
note() { echo "--- $*" >&2; }

# plain_build: true when $ROTOR starts under a 2 GB address-space limit, which
# a sanitizer build (its shadow memory reserved at start-up) cannot; the tests
# that measure or limit memory tell the two builds apart by it.
plain_build() { (ulimit -v 2000000 && "$ROTOR" --version) >/dev/null 2>&1; }

# expect_status WANT CMD...: run CMD, fail unless it exits with WANT; its
# stderr is kept in $TMP/last.err.
expect_status() {
    local want=$1; shift
    local got=0
    "$@" >"$TMP/last.out" 2>"$TMP/last.err" || got=$?
    if [ "$got" != "$want" ]; then
        cat "$TMP/last.err" >&2
        fail "expected exit $want, got $got: $*"
    fi
}

# expect_rank_error NAME RANK ERE: a rank run whose exit code is in
# $TMP/NAME.rcRANK and stderr in $TMP/NAME.errRANK exited non-zero (not 124,
# timeout's) and its error line matches ERE.
expect_rank_error() {
    local name=$1 r=$2 ere=$3 rc
    rc=$(cat "$TMP/$name.rc$r")
    { [ "$rc" != 0 ] && [ "$rc" != 124 ]; } ||
        { cat "$TMP/$name.err$r" >&2; fail "$name: rank $r exited $rc"; }
    grep -Eq "rotor: error: .*$ere" "$TMP/$name.err$r" ||
        { cat "$TMP/$name.err$r" >&2; fail "$name: rank $r does not say /$ere/"; }
}

# A TCP port on 127.0.0.1 that nothing listens on now.
free_port() {
    # Below the kernel's ephemeral range when there is room: a port inside it
    # can be taken, between this check and the listen, as the source port of
    # any outgoing connection (rank 0 retrying to reach a rank not yet
    # listening among them), and the listen then fails (e2e_strangers did).
    local p hex lo=61000 span=40000 base=20000
    read -r lo _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
    [ "$lo" -gt 21024 ] && span=$((lo - base))
    while :; do
        p=$((base + RANDOM % span))
        hex=$(printf '%04X' "$p")
        if ! grep -qi ":$hex " /proc/net/tcp /proc/net/tcp6 2>/dev/null; then
            echo "$p"
            return
        fi
    done
}

# Decompress a public dataset file into $TMP; skip the test when absent.
shared_data() { # shared_data ml-100k/u1.base
    local src="${ROTOR_DATA_DIR:-}/$1.xz" dst="$TMP/$(basename "$1")"
    [ -f "$src" ] || skip "dataset $1 not found under ${ROTOR_DATA_DIR:-<unset>}"
    command -v xz >/dev/null || skip "xz not installed"
    xz -dc "$src" >"$dst"
    echo "$dst"
}

# json_int KEY FILE: the first integer value of "KEY" in a pretty-printed
# JSON file (plan.json).
json_int() { grep -m1 "\"$1\":" "$2" | tr -dc '0-9'; }

# Pull "test_rmse X" of the last epoch line out of a log.
last_test_rmse() { grep -o 'test_rmse [0-9.]*' "$1" | tail -1 | awk '{print $2}'; }

# float_le A B: true when A <= B.
float_le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; }

# single DIR...: merge each model saved by `rotor train --out DIR` (per-rank
# parts) into the single-file model (W.npy, H.npy, ... or word_topic.npy,
# ...) under DIR.single, as rotor export writes it.
single() {
    local d
    for d in "$@"; do
        rm -rf "$d.single"
        "$ROTOR" export --quiet --model "$d" --out "$d.single" 2>"$d.export.err" ||
            { cat "$d.export.err" >&2; fail "export $d"; }
    done
}

# run_logged NAME CMD...: run a training command with --out $TMP/NAME and its
# log in $TMP/NAME.log; on failure show the log and fail.
run_logged() {
    local name=$1
    shift
    "$@" --out "$TMP/$name" 2>"$TMP/$name.log" || { cat "$TMP/$name.log" >&2; fail "run '$name' failed"; }
}

# same_as REF NAME FILE...: each FILE of the exported model $TMP/NAME.single
# is byte for byte the one of $TMP/REF.single.
same_as() {
    local ref=$1 name=$2 f
    shift 2
    for f in "$@"; do
        cmp -s "$TMP/$ref.single/$f" "$TMP/$name.single/$f" ||
            fail "$f of run '$name' differs from run '$ref'"
    done
}

# Two small fixed plans under $TMP: mfplan (600 x 300 planted ratings, 10%
# held out) and ldaplan (300 documents, 8 topics), each for 2 nodes x 2
# threads.  The golden hashes are recorded on exactly these.
small_plans() {
    "$ROTOR" gen mf --rows 600 --cols 300 --nnz 12000 --rank 4 --noise 0.1 --seed 5 \
        --out "$TMP/mf.txt" --test-out "$TMP/mf_test.txt" --test-fraction 0.1 2>/dev/null ||
        fail "gen mf"
    "$ROTOR" partition --input "$TMP/mf.txt" --test "$TMP/mf_test.txt" --nodes 2 --threads 2 \
        --seed 5 --out "$TMP/mfplan" >/dev/null 2>&1 || fail "partition mf"
    "$ROTOR" gen lda --docs 300 --vocab 400 --topics 8 --alpha 0.1 --beta 0.01 --doc-len 60 \
        --seed 5 --out "$TMP/corpus.txt" >/dev/null 2>&1 || fail "gen lda"
    "$ROTOR" partition --app lda --input "$TMP/corpus.txt" --nodes 2 --threads 2 --seed 5 \
        --test-fraction 0.1 --out "$TMP/ldaplan" >/dev/null 2>&1 || fail "partition lda"
}

# tiny_kos DIR: a 200-document corpus (300 words, 5 planted topics) given
# as UCI KOS under DIR (ROTOR_DATA_DIR=DIR), for the bench scripts' tests.
tiny_kos() {
    mkdir -p "$1/uci-kos"
    "$ROTOR" gen lda --docs 200 --vocab 300 --topics 5 --alpha 0.1 --beta 0.01 --doc-len 30 --seed 1 \
        --out "$TMP/kos.uci" >/dev/null 2>&1 || fail "rotor gen lda"
    xz <"$TMP/kos.uci" >"$1/uci-kos/docword.kos.txt.xz"
}
