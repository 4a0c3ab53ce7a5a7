#!/bin/bash
# rotor gen mf + rotor partition end to end: planted data properties,
# determinism, every input format giving the same plan, --test-fraction,
# --force, --verify.
source "$(dirname "$0")/../e2e/lib.sh"
cd "$TMP"
export ROTOR_LOG=warn

# ---- gen mf ----
"$ROTOR" gen mf --rows 2000 --cols 500 --nnz 50000 --rank 4 --noise 0.2 --powerlaw 0.7 \
    --seed 5 --out g.txt --test-out g.test --test-fraction 0.1 || fail "gen mf"
"$ROTOR" gen mf --rows 2000 --cols 500 --nnz 50000 --rank 4 --noise 0.2 --powerlaw 0.7 \
    --seed 5 --out g2.txt --test-out g2.test --test-fraction 0.1 || fail "gen mf (again)"
cmp -s g.txt g2.txt && cmp -s g.test g2.test || fail "gen mf is not deterministic"
"$ROTOR" gen mf --rows 2000 --cols 500 --nnz 50000 --rank 4 --seed 6 --out g3.txt || fail "gen mf seed 6"
cmp -s g.txt g3.txt && fail "gen mf ignores the seed"
[ "$(wc -l <g.txt)" -eq 45000 ] && [ "$(wc -l <g.test)" -eq 5000 ] || fail "gen mf train/test counts"
[ -z "$(cat g.txt g.test | awk '{print $1, $2}' | sort | uniq -d | head -1)" ] || fail "duplicate pairs"
[ "$(awk '{print $1}' g.txt | sort -u | wc -l)" -eq 2000 ] || fail "a row without training ratings"
[ "$(awk '{print $2}' g.txt | sort -u | wc -l)" -eq 500 ] || fail "a column without training ratings"
grep -q '"best_test_rmse": 0.2' g.txt.truth.json || fail "truth file"
# ratings are O(1): the standard deviation is within [0.7, 1.5]
awk '{s += $3; q += $3 * $3} END {sd = sqrt(q / NR - (s / NR)^2); exit !(sd > 0.7 && sd < 1.5)}' g.txt ||
    fail "rating scale"
echo "ok gen mf"

# ---- partition, verify, determinism ----
"$ROTOR" partition --input g.txt --test g.test --nodes 2 --threads 2 --out p1 || fail "partition"
"$ROTOR" partition --verify p1 >verify.out || fail "verify"
grep -q "2000 x 500, 4 workers (2 nodes x 2 threads), 8 blocks, 45000 train / 5000 test" verify.out ||
    fail "verify summary: $(cat verify.out)"
[ "$(json_int nnz_train p1/plan.json)" = 45000 ] || fail "nnz_train"
[ "$(json_int nnz_test p1/plan.json)" = 5000 ] || fail "nnz_test"
grep -q '"command_line": "rotor partition --input g.txt --test g.test' p1/plan.json || fail "command line"
grep -q '"format": "triplets"' p1/plan.json || fail "detected format"
"$ROTOR" partition --input g.txt --test g.test --nodes 2 --threads 2 --out p2 || fail "partition 2"
for f in layout.bin shard-00000.bin shard-00001.bin shard-00002.bin shard-00003.bin rows.ids cols.ids; do
    cmp -s p1/$f p2/$f || fail "partition is not deterministic ($f)"
done
[ "$(grep plan_id p1/plan.json)" = "$(grep plan_id p2/plan.json)" ] || fail "plan_id differs"
echo "ok partition deterministic"

# ---- every format gives the same plan ----
awk 'BEGIN {print "userId,movieId,rating,timestamp"} {print $1 "," $2 "," $3 "," 1000 + NR}' g.txt >g.csv
awk '{print $1 "::" $2 "::" $3 "::" 7}' g.txt >g.dat
awk '{print $1 "\t" $2 "\t" $3 "\t" 99}' g.txt >g.tsv
{ echo '%%MatrixMarket matrix coordinate real general'; echo '% generated'; echo "2000 500 45000"; cat g.txt; } >g.mtx
awk '{print $1 - 1, $2 - 1, $3}' g.txt >g.libmf
for f in csv dat tsv mtx; do
    ROTOR_LOG=info "$ROTOR" partition --input g.$f --nodes 2 --threads 2 --out p-$f 2>log-$f ||
        fail "partition $f"
done
for f in csv dat tsv; do
    for b in layout.bin shard-00000.bin shard-00003.bin cols.ids; do
        cmp -s "p-$f/$b" "p-mtx/$b" || fail "$f plan differs from mm ($b)"
    done
done
grep -q "g.csv: format csv" log-csv || fail "csv not sniffed"
grep -q "g.dat: format movielens-dat" log-dat || fail "dat not sniffed"
grep -q "g.tsv: format triplets" log-tsv || fail "tsv not sniffed"
grep -q "g.mtx: format mm" log-mtx || fail "mm not sniffed"
"$ROTOR" partition --input g.libmf --format libmf --nodes 2 --threads 2 --out p-libmf || fail "libmf"
cmp -s p-libmf/layout.bin p-mtx/layout.bin || fail "libmf layout differs"
cmp -s p-libmf/shard-00002.bin p-mtx/shard-00002.bin || fail "libmf shard differs"
echo "ok formats"

# ---- --test-fraction, --force ----
"$ROTOR" partition --input g.txt --test-fraction 0.2 --seed 3 --nodes 1 --threads 3 --pipeline 3 \
    --out pf 2>/dev/null || fail "test fraction"
tr=$(json_int nnz_train pf/plan.json) te=$(json_int nnz_test pf/plan.json)
dr=$(json_int test_unknown_user_or_item pf/plan.json)
[ $((tr + te + dr)) -eq 45000 ] || fail "split loses ratings: $tr + $te + $dr"
[ "$te" -gt 8000 ] && [ "$te" -lt 10000 ] || fail "split fraction: $te test ratings"
[ "$(json_int blocks pf/plan.json)" = 9 ] || fail "blocks with --pipeline 3"
"$ROTOR" partition --verify pf >/dev/null || fail "verify pf"
"$ROTOR" partition --input g.txt --nodes 1 --threads 1 --out pf 2>/dev/null && fail "overwrote without --force"
"$ROTOR" partition --input g.txt --nodes 1 --threads 1 --out pf --force || fail "--force"
[ "$(json_int workers pf/plan.json)" = 1 ] || fail "--force did not replace the plan"
ls -d pf.* 2>/dev/null && fail "temporary directories left"
echo "ok test-fraction and force"
# --pipeline auto on many workers: a factor whose simulation would cost more
# than W^3 x pipeline^2 = 2e9 (tools/sim_shape.h) is skipped and named, so 200
# workers stop at 12 blocks per worker (16 took minutes at 1024 workers).
"$ROTOR" gen mf --rows 400 --cols 3400 --nnz 8000 --rank 2 --seed 5 --out wide.txt || fail "gen wide"
ROTOR_LOG=info "$ROTOR" partition --input wide.txt --nodes 100 --threads 2 --pipeline auto \
    --out wide.plan 2>wide.log || { cat wide.log >&2; fail "pipeline auto on 200 workers"; }
grep -q 'pipeline auto: 16 blocks per worker: skipped' wide.log || fail "16 not skipped: $(cat wide.log)"
grep -q 'pipeline auto: 12 blocks per worker: predicted' wide.log || fail "12 not simulated"
echo "ok pipeline auto bound"
"$ROTOR" partition --help >help.out || fail "--help"
grep -q -- '--test-fraction' help.out || fail "--help lists --test-fraction"
echo "all ok"
