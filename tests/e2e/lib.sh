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

# A TCP port on 127.0.0.1 that nothing listens on now.
free_port() {
    local p hex
    while :; do
        p=$((20000 + RANDOM % 40000))
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

# Pull "test_rmse X" of the last epoch line out of a log.
last_test_rmse() { grep -o 'test_rmse [0-9.]*' "$1" | tail -1 | awk '{print $2}'; }

# float_le A B: true when A <= B.
float_le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; }
