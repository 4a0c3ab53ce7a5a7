#!/usr/bin/env bash
# MovieLens 100K u1 with a quarter of its training ratings (every fourth
# line of u1.base: ~21 a user), tested on u1.test: sgd-mf with its defaults
# beats a damped mean-plus-biases model (mu + b_u + b_i, 15 alternating
# sweeps of b = sum(r - the rest) / (n + d), the best of d = 2, 3, 5 on the
# test ratings: 0.9839 at d = 3), and the defaults before --lambda-const 5
# (lr 0.05 fixed, lambda 0.1 n on factors and biases: 1.0049) lose to it:
# the per-rating lambda alone leaves the rows and columns of a few ratings
# to fit them.  Skips when ../shared/data is absent.
source "$(dirname "$0")/lib.sh"

base=$(shared_data ml-100k/u1.base)
test=$(shared_data ml-100k/u1.test)
awk 'NR % 4 == 1' "$base" >"$TMP/quarter"
"$ROTOR" partition --input "$TMP/quarter" --test "$test" --nodes 1 --threads 2 --seed 1 \
    --out "$TMP/plan" 2>/dev/null

# bias_rmse D: test RMSE of the damped biases (test pairs unseen in training
# skipped, as rotor eval skips them)
bias_rmse() {
    awk -v d="$1" -F'\t' 'NR == FNR { u[NR] = $1; i[NR] = $2; r[NR] = $3; s += $3; n = NR
                                       nu[$1]++; ni[$2]++; next }
        FNR == 1 { mu = s / n
            for (it = 0; it < 15; it++) {
                delete su; delete si
                for (k = 1; k <= n; k++) su[u[k]] += r[k] - mu - bi[i[k]]
                for (x in nu) bu[x] = su[x] / (nu[x] + d)
                for (k = 1; k <= n; k++) si[i[k]] += r[k] - mu - bu[u[k]]
                for (x in ni) bi[x] = si[x] / (ni[x] + d) } }
        ($1 in nu) && ($2 in ni) { e = mu + bu[$1] + bi[$2] - $3; sse += e * e; m++ }
        END { printf "%.6f\n", sqrt(sse / m) }' "$TMP/quarter" "$test"
}
bias=$( (for d in 2 3 5; do bias_rmse "$d"; done) | sort -n | head -1)

# sgd_rmse NAME [OPTIONS]: rotor eval of the model trained with OPTIONS
sgd_rmse() {
    local name=$1
    shift
    "$ROTOR" train --plan "$TMP/plan" --app sgd-mf --out "$TMP/$name" "$@" >"$TMP/$name.log" 2>&1 ||
        { cat "$TMP/$name.log"; fail "training $name failed"; }
    "$ROTOR" eval --model "$TMP/$name" --input "$test" 2>/dev/null | grep -o 'rmse [0-9.]*' |
        awk '{ print $2 }'
}
now=$(sgd_rmse defaults)
old=$(sgd_rmse old --lr 0.05 --schedule fixed --lambda 0.1 --lambda-bias 0.1 --lambda-const 0)
note "test RMSE: damped biases $bias, sgd-mf defaults $now, old defaults $old"
awk -v a="$now" -v b="$bias" 'BEGIN { exit !(a < b) }' ||
    fail "sgd-mf defaults ($now) do not beat the damped biases ($bias)"
awk -v a="$old" -v b="$bias" 'BEGIN { exit !(a > b) }' ||
    fail "the old defaults ($old) beat the damped biases ($bias): the test lost its point"
echo PASS
