# lib.sh - shared bits of the soft-RoCE test scripts (sourced).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${ROTOR:?ROTOR (the rotor binary) must be set; run through ctest}"
: "${ROTOR_BUILD:?ROTOR_BUILD must be set; run through ctest}"
RXE_VM="$HERE/rxe-vm.sh"
fail() { echo "FAIL: $*" >&2; exit 1; }
# Run a bash snippet in the guest, sharing the build dir; 77 passes through.
in_vm() { bash "$RXE_VM" -t "${RXE_TIMEOUT:-800}" -s "$ROTOR_BUILD" -e "ROTOR=$ROTOR" \
    -e "ROTOR_BUILD=$ROTOR_BUILD" -e "ROTOR_SRC=${ROTOR_SRC:-}" -e ROTOR_LOG=warn -- bash -c "$1"; }
