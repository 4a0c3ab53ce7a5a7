#!/bin/bash
# rotor gen mf + rotor partition end to end: planted data properties,
# determinism, every input format giving the same plan, --test-fraction,
# --force, --verify.
set -u
: "${ROTOR:?set ROTOR to the rotor binary}"
T=$(mktemp -d /tmp/rotor-cli-XXXXXX)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
export ROTOR_LOG=warn
die() { echo "FAIL: $*"; exit 1; }
# First integer value of "key" in a pretty-printed plan.json.
jint() { grep -m1 "\"$1\":" "$2" | tr -dc '0-9'; }

# ---- gen mf ----
"$ROTOR" gen mf --rows 2000 --cols 500 --nnz 50000 --rank 4 --noise 0.2 --powerlaw 0.7 \
    --seed 5 --out g.txt --test-out g.test --test-fraction 0.1 || die "gen mf"
"$ROTOR" gen mf --rows 2000 --cols 500 --nnz 50000 --rank 4 --noise 0.2 --powerlaw 0.7 \
    --seed 5 --out g2.txt --test-out g2.test --test-fraction 0.1 || die "gen mf (again)"
cmp -s g.txt g2.txt && cmp -s g.test g2.test || die "gen mf is not deterministic"
"$ROTOR" gen mf --rows 2000 --cols 500 --nnz 50000 --rank 4 --seed 6 --out g3.txt || die "gen mf seed 6"
cmp -s g.txt g3.txt && die "gen mf ignores the seed"
[ "$(wc -l <g.txt)" -eq 45000 ] && [ "$(wc -l <g.test)" -eq 5000 ] || die "gen mf train/test counts"
[ -z "$(cat g.txt g.test | awk '{print $1, $2}' | sort | uniq -d | head -1)" ] || die "duplicate pairs"
[ "$(awk '{print $1}' g.txt | sort -u | wc -l)" -eq 2000 ] || die "a row without training ratings"
[ "$(awk '{print $2}' g.txt | sort -u | wc -l)" -eq 500 ] || die "a column without training ratings"
grep -q '"best_test_rmse": 0.2' g.txt.truth.json || die "truth file"
# ratings are O(1): the standard deviation is within [0.7, 1.5]
awk '{s += $3; q += $3 * $3} END {sd = sqrt(q / NR - (s / NR)^2); exit !(sd > 0.7 && sd < 1.5)}' g.txt ||
    die "rating scale"
echo "ok gen mf"

# ---- partition, verify, determinism ----
"$ROTOR" partition --input g.txt --test g.test --nodes 2 --threads 2 --out p1 || die "partition"
"$ROTOR" partition --verify p1 >verify.out || die "verify"
grep -q "2000 x 500, 4 workers (2 nodes x 2 threads), 8 blocks, 45000 train / 5000 test" verify.out ||
    die "verify summary: $(cat verify.out)"
[ "$(jint nnz_train p1/plan.json)" = 45000 ] || die "nnz_train"
[ "$(jint nnz_test p1/plan.json)" = 5000 ] || die "nnz_test"
grep -q '"command_line": "rotor partition --input g.txt --test g.test' p1/plan.json || die "command line"
grep -q '"format": "triplets"' p1/plan.json || die "detected format"
"$ROTOR" partition --input g.txt --test g.test --nodes 2 --threads 2 --out p2 || die "partition 2"
for f in layout.bin shard-00000.bin shard-00001.bin shard-00002.bin shard-00003.bin rows.ids cols.ids; do
    cmp -s p1/$f p2/$f || die "partition is not deterministic ($f)"
done
[ "$(grep plan_id p1/plan.json)" = "$(grep plan_id p2/plan.json)" ] || die "plan_id differs"
echo "ok partition deterministic"

# ---- every format gives the same plan ----
awk 'BEGIN {print "userId,movieId,rating,timestamp"} {print $1 "," $2 "," $3 "," 1000 + NR}' g.txt >g.csv
awk '{print $1 "::" $2 "::" $3 "::" 7}' g.txt >g.dat
awk '{print $1 "\t" $2 "\t" $3 "\t" 99}' g.txt >g.tsv
{ echo '%%MatrixMarket matrix coordinate real general'; echo '% generated'; echo "2000 500 45000"; cat g.txt; } >g.mtx
awk '{print $1 - 1, $2 - 1, $3}' g.txt >g.libmf
for f in csv dat tsv mtx; do
    ROTOR_LOG=info "$ROTOR" partition --input g.$f --nodes 2 --threads 2 --out p-$f 2>log-$f ||
        die "partition $f"
done
for f in csv dat tsv; do
    for b in layout.bin shard-00000.bin shard-00003.bin cols.ids; do
        cmp -s "p-$f/$b" "p-mtx/$b" || die "$f plan differs from mm ($b)"
    done
done
grep -q "g.csv: format csv" log-csv || die "csv not sniffed"
grep -q "g.dat: format movielens-dat" log-dat || die "dat not sniffed"
grep -q "g.tsv: format triplets" log-tsv || die "tsv not sniffed"
grep -q "g.mtx: format mm" log-mtx || die "mm not sniffed"
"$ROTOR" partition --input g.libmf --format libmf --nodes 2 --threads 2 --out p-libmf || die "libmf"
cmp -s p-libmf/layout.bin p-mtx/layout.bin || die "libmf layout differs"
cmp -s p-libmf/shard-00002.bin p-mtx/shard-00002.bin || die "libmf shard differs"
echo "ok formats"

# ---- --test-fraction, --force ----
"$ROTOR" partition --input g.txt --test-fraction 0.2 --seed 3 --nodes 1 --threads 3 --pipeline 3 \
    --out pf 2>/dev/null || die "test fraction"
tr=$(jint nnz_train pf/plan.json) te=$(jint nnz_test pf/plan.json)
dr=$(jint test_unknown_user_or_item pf/plan.json)
[ $((tr + te + dr)) -eq 45000 ] || die "split loses ratings: $tr + $te + $dr"
[ "$te" -gt 8000 ] && [ "$te" -lt 10000 ] || die "split fraction: $te test ratings"
[ "$(jint blocks pf/plan.json)" = 9 ] || die "blocks with --pipeline 3"
"$ROTOR" partition --verify pf >/dev/null || die "verify pf"
"$ROTOR" partition --input g.txt --nodes 1 --threads 1 --out pf 2>/dev/null && die "overwrote without --force"
"$ROTOR" partition --input g.txt --nodes 1 --threads 1 --out pf --force || die "--force"
[ "$(jint workers pf/plan.json)" = 1 ] || die "--force did not replace the plan"
ls -d pf.* 2>/dev/null && die "temporary directories left"
echo "ok test-fraction and force"
"$ROTOR" partition --help | grep -q -- '--test-fraction' || die "--help"
echo "all ok"
