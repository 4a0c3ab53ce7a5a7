#!/usr/bin/env bash
# validation.sh - what --validation-fraction F --early-stop N buys on
# MovieLens 100K u1..u5 (from ../shared/data): per fold, the run with
# defaults only (its last epoch's logged test RMSE, as bench/quality.sh
# reads it, and rotor eval of its model) next to the run with validation and
# early stopping (the epoch it stopped at, its best epoch by validation and
# rotor eval's test RMSE of the model it saved, which is that epoch's), then
# the means over the folds, as JSON.  Quality only: no timings.
#
# Options: --app sgd-mf|cd-mf (default sgd-mf), --fraction F (0.1),
# --early-stop N (3), --epochs N (0: the app's default), --threads T (2).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
app=sgd-mf fraction=0.1 early_stop=3 epochs=0 threads=2
bench_options 2,11 "$@"
DATA=${ROTOR_DATA_DIR:-$ROOT/../shared/data}/ml-100k
bench_start
[ -d "$DATA" ] || bench_fail "no MovieLens 100K under $DATA"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
length=()
if [ "$epochs" != 0 ]; then
    [ "$app" = cd-mf ] && length=(--outer "$epochs") || length=(--epochs "$epochs")
fi

rmse_of() { "$ROTOR" eval --model "$1" --input "$2" 2>/dev/null | grep -o 'rmse [0-9.]*' | head -1 | awk '{ print $2 }'; }
last_logged() { field test_rmse "$1" | tail -1; }

folds=""
for f in 1 2 3 4 5; do
    d=$TMP/f$f
    mkdir -p "$d"
    xz -dc "$DATA/u$f.base.xz" | cut -f1-3 | tr '\t' ' ' >"$d/base"
    xz -dc "$DATA/u$f.test.xz" | cut -f1-3 | tr '\t' ' ' >"$d/test"
    "$ROTOR" partition --input "$d/base" --test "$d/test" --nodes 1 --threads "$threads" \
        --seed 1 --out "$d/plan" >/dev/null 2>&1 || bench_fail "partition of u$f failed"
    "$ROTOR" train --plan "$d/plan" --app "$app" "${length[@]}" --metrics "$d/defaults.json" \
        --out "$d/defaults" >/dev/null 2>&1 || bench_fail "u$f: the defaults run failed"
    "$ROTOR" train --plan "$d/plan" --app "$app" "${length[@]}" --validation-fraction "$fraction" \
        --early-stop "$early_stop" --metrics "$d/valid.json" --out "$d/valid" \
        >"$d/valid.log" 2>&1 || bench_fail "u$f: the validation run failed"
    ran=$(field valid_rmse "$d/valid.json" | wc -l)
    best=$(field best_epoch "$d/valid/model.json")
    [ -n "$best" ] || best=$(field best_outer "$d/valid/model.json")
    stopped=false
    grep -q "early stop after" "$d/valid.log" && stopped=true
    folds+=$(printf '%s\n    {"fold": "u%s", "defaults_logged_test_rmse": %s, "defaults_eval_test_rmse": %s, "epochs_run": %s, "early_stopped": %s, "best_epoch": %s, "best_valid_rmse": %s, "eval_test_rmse": %s}' \
        "${folds:+,}" "$f" "$(last_logged "$d/defaults.json")" "$(rmse_of "$d/defaults" "$d/test")" \
        "$ran" "$stopped" "$best" "$(field valid_rmse "$d/valid/model.json")" \
        "$(rmse_of "$d/valid" "$d/test")")
done
means=$(grep -o '"[a-z_]*test_rmse": [0-9.]*' <<<"$folds" | tr -d '":' |
        awk '{ s[$1] += $2; n[$1]++ } END { c = 0; for (k in s) printf "%s\"%s\": %.5f", c++ ? ", " : "", k, s[k] / n[k] }')
printf '{"app": "%s", "validation_fraction": %s, "early_stop": %s, "threads": %s,\n "load": ["%s", "%s"],\n "folds": [%s],\n "mean": {%s}}\n' \
    "$app" "$fraction" "$early_stop" "$threads" "$load_start" "$(cut -d' ' -f1-3 /proc/loadavg)" "$folds" "$means"
