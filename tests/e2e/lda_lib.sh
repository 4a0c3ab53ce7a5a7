# lda_lib.sh - helpers for the LDA end-to-end tests (sourced after lib.sh).
LDA_REF="${ROTOR_BUILD:?}/tests/apps/lda_ref"
[ -x "$LDA_REF" ] || fail "lda_ref not built ($LDA_REF)"

# ll_at ITER LOG: the ll/token logged for iteration ITER.
ll_at() { grep -o "lda iter $1: ll/token [-0-9.e+]*" "$2" | tail -1 | awk '{print $5}'; }
# perplexity_at ITER LOG
perplexity_at() { grep -o "lda iter $1: .*held-out perplexity [0-9.]*" "$2" | tail -1 | awk '{print $NF}'; }
# The metric lines of a log, without timings (for comparing two runs).
ll_lines() { grep -o 'lda iter [0-9]*: ll/token [-0-9.e+]* log p(w,z) [-0-9.e+]* held-out perplexity [-0-9.]*' "$1"; }

# rel_within A B TOL: |A - B| <= TOL * |B|
rel_within() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; m = b < 0 ? -b : b; exit !(d <= t * m) }'; }

# launch_available: skip when `rotor launch` is not built.
launch_or_skip() {
    local st=0
    "$ROTOR" launch --help >/dev/null 2>&1 || st=$?
    [ "$st" = 0 ] || skip "rotor launch is not available (exit $st)"
}

# A small corpus with 20 planted topics: $TMP/gen.txt (+ .topics.npy).
gen_small_corpus() {
    "$ROTOR" gen lda --docs 2000 --vocab 1000 --topics 20 --alpha 0.1 --beta 0.01 \
        --doc-len 100 --seed 7 --out "$TMP/gen.txt" >/dev/null
}

LDA_OPTS=(--app lda --topics 20 --alpha 0.1 --beta 0.01)
