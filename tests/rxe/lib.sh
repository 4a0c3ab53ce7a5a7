# lib.sh - shared bits of the soft-RoCE test scripts (sourced).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${ROTOR:?ROTOR (the rotor binary) must be set; run through ctest}"
: "${ROTOR_BUILD:?ROTOR_BUILD must be set; run through ctest}"
RXE_VM="$HERE/rxe-vm.sh"
fail() { echo "FAIL: $*" >&2; exit 1; }
# Run a bash snippet in the guest, sharing the build dir.  77 (no qemu or no
# kernel image) passes through; a guest that cannot boot or bring up rxe0
# (125) is a skip too, with the harness's message above it.
in_vm() {
    local rc=0
    bash "$RXE_VM" -t "${RXE_TIMEOUT:-800}" -s "$ROTOR_BUILD" -e "ROTOR=$ROTOR" \
        -e "ROTOR_BUILD=$ROTOR_BUILD" -e "ROTOR_SRC=${ROTOR_SRC:-}" -e ROTOR_LOG=warn \
        -- bash -c "$1" || rc=$?
    if ((rc == 125)); then
        echo "SKIP: the soft-RoCE VM could not boot (see above)"
        exit 77
    fi
    return $rc
}
