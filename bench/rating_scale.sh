#!/usr/bin/env bash
# rating_scale.sh - the MF apps' defaults on ratings in other units: MovieLens
# 100K u1 and u2 and FilmTrust (two seeded 80/20 splits; from ../shared/data)
# with every rating multiplied by s, trained by sgd-mf and cd-mf with default
# options; per data set, scale and app the last epoch's logged test RMSE
# divided by s (what the same model scores in stars) and the --rating-scale
# the run chose, as JSON.  Quality only: no timings.  ROTOR=... runs another
# binary (a rotor before --rating-scale prints "chose": null).
#
# Options: --scales LIST (0.2,1,2,5,20,100), --threads T (2).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
scales=0.2,1,2,5,20,100 threads=2
bench_options 2,10 "$@"
DATA=${ROTOR_DATA_DIR:-$ROOT/../shared/data}
bench_start
[ -d "$DATA/ml-100k" ] && [ -d "$DATA/filmtrust" ] || bench_fail "no MovieLens 100K or FilmTrust under $DATA"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
has_scale=0 # 1 when this rotor has --rating-scale: a run that says nothing chose 1
[[ $("$ROTOR" train --help 2>/dev/null || true) == *--rating-scale* ]] && has_scale=1

for f in 1 2; do
    xz -dc "$DATA/ml-100k/u$f.base.xz" | cut -f1-3 >"$TMP/ml100k-u$f.train"
    xz -dc "$DATA/ml-100k/u$f.test.xz" | cut -f1-3 >"$TMP/ml100k-u$f.test"
    xz -dc "$DATA/filmtrust/ratings.txt.xz" | awk -v seed="$f" -v out="$TMP/filmtrust-$f" \
        'BEGIN { srand(seed) } { print > (out (rand() < 0.2 ? ".test" : ".train")) }'
done

rows=""
for set in ml100k-u1 ml100k-u2 filmtrust-1 filmtrust-2; do
    for s in ${scales//,/ }; do
        d=$TMP/$set-$s
        for part in train test; do
            awk -v s="$s" '{ printf "%s\t%s\t%.10g\n", $1, $2, $3 * s }' "$TMP/$set.$part" >"$d.$part"
        done
        "$ROTOR" partition --input "$d.train" --test "$d.test" --nodes 1 --threads "$threads" \
            --seed 1 --out "$d.plan" >/dev/null 2>&1 || bench_fail "partition of $set x $s failed"
        for app in sgd-mf cd-mf; do
            rmse=null
            if "$ROTOR" train --plan "$d.plan" --app "$app" --metrics "$d.$app.json" \
                >"$d.$app.log" 2>&1; then
                rmse=$(field test_rmse "$d.$app.json" | tail -1 | awk -v s="$s" '{ printf "%.5f", $1 / s }')
            fi
            chose=$(grep -o 'training on rating / [0-9.e+-]*' "$d.$app.log" | awk '{ print $5 }' || true)
            [ "$has_scale" = 1 ] && : "${chose:=1}"
            rows+=$(printf '%s\n    {"data": "%s", "scale": %s, "app": "%s", "test_rmse_over_scale": %s, "chose": %s}' \
                "${rows:+,}" "$set" "$s" "$app" "$rmse" "${chose:-null}")
        done
    done
done
printf '{"benchmark": "rating_scale", "threads": %s,\n "load": ["%s", "%s"],\n "runs": [%s]}\n' \
    "$threads" "$load_start" "$(cut -d' ' -f1-3 /proc/loadavg)" "$rows"
