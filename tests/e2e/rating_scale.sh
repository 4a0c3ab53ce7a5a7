#!/usr/bin/env bash
# --rating-scale auto: ratings in other units train the model 1-5 stars
# would.  The same integer stars, once as 1..5 and once times 64 (as 0-320
# scores), give SGD-MF and CD-MF with default options the same W bit for
# bit, and H, the biases, mu and the logged RMSEs exactly 64 times those of
# the stars (the scale is a power of two, so dividing and multiplying back
# is exact); `rotor eval` agrees.  CD-MF's logged train RMSE equals an
# independent recomputation from the exported model.  Ratings that are all
# the same, and training without --out, are named in the log.
source "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || skip "python3 is needed to read the .npy files"

"$ROTOR" gen mf --rows 600 --cols 300 --nnz 15000 --rank 4 --noise 0.3 --seed 7 \
    --out "$TMP/g.txt" --test-out "$TMP/g_test.txt" --test-fraction 0.1 2>/dev/null || fail "gen mf"
for f in g g_test; do # stars 1..5 from the planted values, and the same times 64
    awk '{ v = int($3 * 1.2 + 3.5); v = v < 1 ? 1 : v > 5 ? 5 : v; print $1, $2, v }' \
        "$TMP/$f.txt" >"$TMP/$f.stars"
    awk '{ print $1, $2, $3 * 64 }' "$TMP/$f.stars" >"$TMP/$f.x64"
done
for u in stars x64; do
    "$ROTOR" partition --input "$TMP/g.$u" --test "$TMP/g_test.$u" --nodes 1 --threads 2 \
        --seed 5 --out "$TMP/plan.$u" >/dev/null 2>&1 || fail "partition $u"
done

declare -A length=([sgd-mf]="--epochs 8" [cd-mf]="--outer 6")
for app in sgd-mf cd-mf; do
    for u in stars x64; do
        # shellcheck disable=SC2086
        run_logged "$app.$u" "$ROTOR" train --plan "$TMP/plan.$u" --app "$app" ${length[$app]}
    done
    grep -q 'rating / 64 (--rating-scale auto' "$TMP/$app.x64.log" ||
        fail "$app did not scale the x64 ratings: $(cat "$TMP/$app.x64.log")"
    ! grep -q 'rating /' "$TMP/$app.stars.log" || fail "$app scaled 1-5 stars"
    single "$TMP/$app.stars" "$TMP/$app.x64"
    same_as "$app.stars" "$app.x64" W.npy
    for u in stars x64; do
        "$ROTOR" eval --model "$TMP/$app.$u" --input "$TMP/g_test.$u" 2>/dev/null |
            grep -o 'rmse [0-9.]*' | awk '{print $2}' >"$TMP/$app.$u.eval"
    done
    python3 - "$TMP/$app" "$TMP/g.stars" <<'PY' || fail "$app: the x64 model is not 64 x the stars' model"
import ast, json, math, struct, sys
base, train = sys.argv[1], sys.argv[2]
def npy(path):
    b = open(path, 'rb').read()
    hl = struct.unpack('<H', b[8:10])[0]
    h = ast.literal_eval(b[10:10 + hl].decode())
    assert h['descr'] == '<f4', h
    return h['shape'], struct.unpack('<%df' % ((len(b) - 10 - hl) // 4), b[10 + hl:])
for f in ['H.npy', 'row_bias.npy', 'col_bias.npy']:
    (_, a), (_, b) = npy(base + '.stars.single/' + f), npy(base + '.x64.single/' + f)
    bad = [i for i in range(len(a)) if b[i] != 64 * a[i]]
    assert not bad, '%s: entry %d: %r vs 64 x %r' % (f, bad[0], b[bad[0]], a[bad[0]])
ms, mx = (json.load(open(base + s + '.single/model.json')) for s in ('.stars', '.x64'))
for key in ['mu', 'train_rmse', 'test_rmse']:
    assert mx[key] == 64 * ms[key], '%s: %r vs 64 x %r' % (key, mx[key], ms[key])
assert mx['rating_scale'] == 64 and 'rating_scale' not in ms
es, ex = (float(open(base + s + '.eval').read()) for s in ('.stars', '.x64'))
assert abs(ex - 64 * es) <= 1e-5 * ex, 'rotor eval: %r vs 64 x %r' % (ex, es)
if base.endswith('cd-mf'):  # train RMSE, recomputed from the exported model in doubles
    (n, k), W = npy(base + '.stars.single/W.npy')
    H, bu, bi = (npy(base + '.stars.single/' + f)[1] for f in ('H.npy', 'row_bias.npy', 'col_bias.npy'))
    rows = {l.strip(): i for i, l in enumerate(open(base + '.stars.single/rows.ids'))}
    cols = {l.strip(): i for i, l in enumerate(open(base + '.stars.single/cols.ids'))}
    sse = cnt = 0
    for line in open(train):
        u, i, r = line.split()
        u, i = rows[u], cols[i]
        p = ms['mu'] + bu[u] + bi[i] + sum(W[u * k + d] * H[i * k + d] for d in range(k))
        sse += (float(r) - p) ** 2
        cnt += 1
    got = math.sqrt(sse / cnt)
    assert abs(got - ms['train_rmse']) <= 1e-5 * got, 'train RMSE %r, recomputed %r' % (ms['train_rmse'], got)
PY
    note "$app: x64 = 64 x stars (test RMSE $(cat "$TMP/$app.stars.eval") / $(cat "$TMP/$app.x64.eval"))"
done

# --rating-scale S is the scale given (here the one auto chose: the same model).
run_logged fixed "$ROTOR" train --plan "$TMP/plan.x64" --app sgd-mf --epochs 8 --rating-scale 64
! grep -q 'rating-scale auto' "$TMP/fixed.log" || fail "--rating-scale 64 was chosen automatically"
single "$TMP/fixed"
same_as sgd-mf.x64 fixed W.npy H.npy row_bias.npy col_bias.npy
# User-item pairs trained as explicit ratings: every rating is 1, and the log says so.
awk '{ print $1, $2 }' "$TMP/g.stars" >"$TMP/pairs.txt"
"$ROTOR" partition --input "$TMP/pairs.txt" --nodes 1 --threads 2 --out "$TMP/plan.pairs" \
    >/dev/null 2>&1 || fail "partition pairs"
run_logged pairs "$ROTOR" train --plan "$TMP/plan.pairs" --app sgd-mf --epochs 1
grep -q 'every training rating is the same.*--implicit' "$TMP/pairs.log" ||
    fail "no warning for ratings that are all the same: $(cat "$TMP/pairs.log")"

# A plan without test ratings shows no test column (it was 'test_rmse nan').
! grep -q 'nan' "$TMP/pairs.log" || fail "the log of a plan without a test set shows nan"

# Training without --out says at the start that the model will not be saved.
! grep -q 'no --out' "$TMP/pairs.log" || fail "a run with --out says it has none"
"$ROTOR" train --plan "$TMP/plan.pairs" --app sgd-mf --epochs 1 2>"$TMP/noout.log" ||
    fail "train without --out: $(cat "$TMP/noout.log")"
grep -q 'no --out: the trained model will not be saved' "$TMP/noout.log" ||
    fail "train without --out does not say the model is not saved"
echo PASS
