# cd_mf_lib.sh - helpers for the cd-mf end-to-end tests (sourced after lib.sh).

# The app must be linked into rotor (apps/registry.c lists it).
# (Read the whole help first: grep -q exiting early would SIGPIPE rotor,
# which pipefail turns into a failure.)
help_text=$("$ROTOR" train --help 2>/dev/null)
grep -q '^cd-mf options' <<<"$help_text" ||
    fail "rotor was built without the cd-mf app (is rt_app_cd_mf still weak in apps/registry.c?)"

# Sets REF: the plain serial CCD++ reference (tests/apps/cd_mf_ref.c) that
# the objective curves are compared with.
cd_mf_need_reference() {
    REF=${ROTOR_BUILD:?}/tests/apps/cd_mf_ref
    [ -x "$REF" ] || fail "serial reference $REF is not built"
}

# Planted data and a 2-node x 2-thread plan under $TMP (data.txt, test.txt, plan/).
cd_mf_planted_plan() { # cd_mf_planted_plan ROWS COLS NNZ TRUE_RANK [NOISE (0.1)]
    "$ROTOR" gen mf --rows "$1" --cols "$2" --nnz "$3" --rank "$4" --noise "${5:-0.1}" --seed 3 \
        --out "$TMP/data.txt" --test-out "$TMP/test.txt" --test-fraction 0.1 2>"$TMP/gen.log" ||
        { cat "$TMP/gen.log" >&2; fail "rotor gen mf failed"; }
    "$ROTOR" partition --input "$TMP/data.txt" --test "$TMP/test.txt" --nodes 2 --threads 2 \
        --seed 3 --out "$TMP/plan" 2>"$TMP/partition.log" ||
        { cat "$TMP/partition.log" >&2; fail "rotor partition failed"; }
}

# The per-outer-iteration lines of a cd-mf log as "N objective train_rmse test_rmse"
# (with or without rotor launch's "[rank] " prefix).
cd_mf_curve() {
    awk '{
        for (s = 1; s < NF && !($s == "rotor:" && $(s + 1) == "outer"); s++) {}
        if (s >= NF) next
        n = $(s + 2); obj = tr = te = "";
        for (i = s + 3; i < NF; i++) {
            if ($i == "objective") obj = $(i + 1);
            if ($i == "train_rmse") tr = $(i + 1);
            if ($i == "test_rmse") te = $(i + 1);
        }
        print n, obj, tr, te
    }' "$1"
}

# cd_mf_check_eval MODEL_DIR TEST_FILE LOG: `rotor eval` of the saved model on
# the test ratings agrees with the last logged test RMSE (1e-4 relative).
cd_mf_check_eval() {
    local got logged
    got=$("$ROTOR" eval --model "$1" --input "$2" 2>/dev/null | grep -o 'rmse [0-9.]*' | head -1 |
          awk '{print $2}')
    logged=$(cd_mf_curve "$3" | awk 'END { print $4 }')
    [ -n "$got" ] || fail "rotor eval printed no rmse for $1"
    awk -v a="$got" -v b="$logged" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-4 * b) }' ||
        fail "rotor eval of the saved model gives rmse $got, the run logged $logged"
}
