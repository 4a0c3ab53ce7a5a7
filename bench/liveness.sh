#!/usr/bin/env bash
# Liveness trials at length (issue 9): 100 kill trials and 20 freeze trials
# of a 4-rank job (tests/e2e/liveness_trials.sh; the test suite runs 5 + 3).
#   bench/liveness.sh [KILLS [FREEZES]]      prints one JSON object
set -euo pipefail
case ${1:-} in
-h | --help) sed -n '2,4p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export ROTOR=${ROTOR:-$ROOT/build/tools/rotor}
exec bash "$ROOT/tests/e2e/liveness_trials.sh" "${1:-100}" "${2:-20}"
