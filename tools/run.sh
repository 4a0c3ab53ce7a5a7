#!/usr/bin/env bash
# run.sh - set up, build and run rotor.  The README's two commands:
#
#   tools/run.sh demo   install Debian packages, build, then train SGD-MF on
#                       generated planted data with 2 local processes x 2 threads
#   tools/run.sh test   install Debian packages, build (plus an ASan/UBSan
#                       build and a clang libFuzzer build), run the whole test
#                       suite, then every fuzz target for a bounded time
#
# Also: tools/run.sh build (install + build only).  Idempotent: packages are
# installed only when missing, builds are incremental.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
JOBS=$(nproc 2>/dev/null || echo 2)

# What the build needs (libcmocka-dev too: the tests are always built), and
# gnuplot-nox for `rotor plot`.  libpmix-dev: ranks under mpirun/srun find
# each other without a hostfile (optional, but found only at configure time,
# so it is here rather than installed later with the tests).
PACKAGES=(build-essential cmake pkg-config libibverbs-dev librdmacm-dev libhwloc-dev
          libjansson-dev libxxhash-dev libcmocka-dev libsodium-dev libunistring-dev gnuplot-nox
          libpmix-dev)

# The fuzz targets (tests/fuzz/) need clang's libFuzzer runtime.
FUZZ_PACKAGES=(clang-14 libclang-rt-14-dev)

# Tests only: xz-utils for the compressed datasets, python3-fusepy for the
# disk that fails with EIO (tests/e2e/eiofs.py), man-db to render the man
# pages (e2e_install), openmpi-bin for mpirun (e2e_mpirun_pmix), time for
# GNU time's peak RSS (partition_memory's bound on the estimate).
TEST_PACKAGES=(xz-utils python3-fusepy man-db openmpi-bin time)

say() { printf '\n==> %s\n' "$*" >&2; }

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"
    elif command -v sudo >/dev/null; then sudo "$@"
    else echo "run.sh: need root (or sudo) to run: $*" >&2; return 1; fi
}

install_packages() {
    local missing=()
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
            missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    say "installing Debian packages: ${missing[*]}"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        "${missing[@]}" >/dev/null
}

build() { # build DIR [--target T --] [cmake args...]
    local dir=$1 target=(); shift
    if [ "${1:-}" = --target ]; then target=(--target "$2"); shift 3; fi
    say "building in $dir"
    cmake -S "$ROOT" -B "$ROOT/$dir" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
    cmake --build "$ROOT/$dir" -j"$JOBS" "${target[@]}"
}

demo() {
    local out="$ROOT/demo" rotor="$ROOT/build/tools/rotor"
    rm -rf "$out" && mkdir -p "$out"
    say "generating planted data: 16000 x 4000, 1M training ratings, true rank 8, noise 0.1"
    "$rotor" gen mf --rows 16000 --cols 4000 --nnz 1100000 --rank 8 --noise 0.1 --seed 7 \
        --out "$out/ratings.txt" --test-out "$out/test.txt" --test-fraction 0.0909
    say "partitioning for 2 nodes x 2 threads"
    "$rotor" partition --input "$out/ratings.txt" --test "$out/test.txt" --nodes 2 --threads 2 \
        --seed 7 --out "$out/plan"
    say "training SGD-MF: 2 processes x 2 threads over loopback"
    # Settings for planted noise-0.1 data: the defaults (--lambda-const 5,
    # set for sparse real ratings) shrink its rank-8 factors to test RMSE
    # 0.184 where these reach 0.110.
    "$rotor" launch -n 2 -- "$rotor" train --plan "$out/plan" --app sgd-mf --rank 8 \
        --lr 0.05 --lambda 0.001 --lambda-const 0 --schedule bold --adaptive none --no-biases \
        --epochs 25 --seed 7 --out "$out/model" --metrics "$out/metrics.json"
    say "drawing the convergence curves: $out/convergence.png"
    "$rotor" plot "$out/metrics.json" --y train_rmse,test_rmse --out "$out/convergence.png" \
        --title "rotor demo: SGD-MF, 2 processes x 2 threads"
    say "scoring the saved model on the held-out ratings (noise floor: 0.1)"
    "$rotor" eval --model "$out/model" --input "$out/test.txt"
    say "merging the per-rank parts into $out/model.npy (W.npy, H.npy, rows.ids, cols.ids)"
    "$rotor" export --model "$out/model" --out "$out/model.npy"
    say "done: model in $out/model (per-rank parts), single files in $out/model.npy"
    cat "$out/model.npy/model.json"
}

run_tests() {
    # rxe tests boot a soft-RoCE VM; their harness installs qemu when it can.
    local failed=()
    say "test suite (release build)"
    ctest --test-dir "$ROOT/build" --output-on-failure -j"$JOBS" || failed+=("release (build/)")
    say "test suite (ASan + UBSan build; slow and VM tests run in the release build only)"
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
        LSAN_OPTIONS=suppressions="$ROOT/tests/lsan.supp" \
        ctest --test-dir "$ROOT/build-asan" --output-on-failure -j"$JOBS" -LE 'slow|rxe|data' ||
        failed+=("ASan + UBSan (build-asan/)")
    say "fuzz targets (libFuzzer + ASan + UBSan, ROTOR_FUZZ_SECONDS each; any crash fails)"
    ctest --test-dir "$ROOT/build-fuzz" --output-on-failure -j"$JOBS" -L fuzz ||
        failed+=("fuzz (build-fuzz/)")
    # One last line that says which suites failed: ctest's own summaries
    # scroll away behind the next suite's output.
    if [ ${#failed[@]} -gt 0 ]; then
        say "FAILED: ${failed[*]}; each suite's 'The following tests FAILED' list names the tests"
        return 1
    fi
    say "all three suites passed"
}

main() {
    local what=${1:-}
    case "$what" in
    demo)
        install_packages "${PACKAGES[@]}"
        build build
        demo
        ;;
    test)
        install_packages "${PACKAGES[@]}" "${FUZZ_PACKAGES[@]}" "${TEST_PACKAGES[@]}"
        build build
        build build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DROTOR_SANITIZE=ON
        build build-fuzz --target fuzz_targets -- -DCMAKE_C_COMPILER=clang-14 \
            -DCMAKE_BUILD_TYPE=RelWithDebInfo \
            -DROTOR_FUZZ=ON -DROTOR_WERROR=ON
        run_tests
        ;;
    build)
        install_packages "${PACKAGES[@]}"
        build build
        ;;
    -h | --help)
        sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'
        ;;
    *)
        echo "usage: tools/run.sh demo|test|build" >&2
        exit 2
        ;;
    esac
}

main "$@"
