#!/bin/bash
# rotor partition's peak memory estimate and --max-memory, both apps:
# the estimate is printed once the input is read; it is an upper bound on
# the measured peak RSS within the factor README states (2.5 here, 1.15-1.7
# measured); above --max-memory the command refuses with exit 2 and writes
# nothing; the size is parsed strictly.
source "$(dirname "$0")/../e2e/lib.sh"
cd "$TMP"
export ROTOR_LOG=info

"$ROTOR" gen mf --rows 3000 --cols 800 --nnz 600000 --rank 2 --seed 3 --out r.txt 2>/dev/null ||
    fail "gen mf"
"$ROTOR" gen lda --docs 3000 --vocab 5000 --topics 4 --doc-len 300 --seed 3 --out c.txt 2>/dev/null ||
    fail "gen lda"

# peak KIB_FILE CMD...: run CMD, write its peak RSS (KiB, GNU time's %M) to
# KIB_FILE (0 without GNU time); the command's exit code.
peak() {
    local out=$1
    shift
    if [ -x /usr/bin/time ]; then
        /usr/bin/time -o "$out" -f %M "$@"
    else
        echo 0 >"$out"
        "$@"
    fi
}

# The bound is checked only for a plain build: a sanitizer build's RSS holds
# its shadow memory and freed-block quarantine, which the estimate (of
# rotor's own allocations) does not count (ASan: 60664 KiB measured against
# 57036 estimated on the mf case); lib.sh's plain_build tells them apart.

# estimate_kib LOG: the printed estimate in KiB.
estimate_kib() {
    sed -n 's/.*memory: peak estimate \([0-9.]*\) \([KMG]\)iB.*/\1 \2/p' "$1" |
        awk '{m = $2 == "K" ? 1 : $2 == "M" ? 1024 : 1048576; printf "%d\n", $1 * m}'
}

for app in mf lda; do
    in=r.txt
    [ $app = lda ] && in=c.txt
    args=(partition --app $app --input "$in" --nodes 2 --threads 2)
    peak kib.$app "$ROTOR" "${args[@]}" --out p.$app --max-memory 4G 2>log.$app ||
        fail "$app: partition with --max-memory 4G: $(cat log.$app)"
    grep -q "within --max-memory" log.$app || fail "$app: no estimate line: $(cat log.$app)"
    est=$(estimate_kib log.$app)
    meas=$(cat kib.$app)
    [ -n "$est" ] && [ "$est" -gt 0 ] || fail "$app: estimate not found: $(cat log.$app)"
    # an upper bound, within the stated factor
    [ "$meas" -gt 0 ] || note "no GNU time: the bound is not checked"
    plain_build || { note "sanitizer build: the bound is not checked"; meas=0; }
    [ "$meas" -eq 0 ] || [ "$est" -ge "$meas" ] || fail "$app: estimate $est KiB below the measured peak $meas KiB"
    [ "$meas" -eq 0 ] || [ "$est" -le $((meas * 5 / 2)) ] || fail "$app: estimate $est KiB above 2.5 x measured $meas KiB"
    echo "ok $app: estimate $est KiB, measured $meas KiB"

    # Below the estimate: refused before the plan is written.
    lim=$((est / 2))K
    set +e
    "$ROTOR" "${args[@]}" --out q.$app --max-memory "$lim" 2>err.$app
    rc=$?
    set -e
    [ $rc -eq 2 ] || fail "$app: --max-memory $lim: exit $rc, want 2: $(cat err.$app)"
    # ratings: as read, at the first rating past the budget; a corpus: once
    # read, before the plan
    if [ $app = mf ]; then
        grep -q "^rotor: error: $in:[0-9]*: rating [0-9]* is more than the [0-9]* that --max-memory leaves room for; nothing written" err.$app ||
            fail "$app: refusal as read: $(cat err.$app)"
    else
        grep -q "^rotor: error: $in: the plan needs about .* of memory at its peak .*more than --max-memory $lim (.*); nothing written" err.$app ||
            fail "$app: refusal message: $(cat err.$app)"
    fi
    [ ! -e q.$app ] && [ -z "$(find . -name '*.tmp*')" ] || fail "$app: refusal left files behind"
    echo "ok $app: --max-memory $lim refused"
done

# A limit below what rotor holds before reading: refused at the second rating.
head -15000 r.txt >small.txt
set +e
"$ROTOR" partition --input small.txt --nodes 2 --threads 2 --out q.small --max-memory 1M 2>err.small
rc=$?
set -e
[ $rc -eq 2 ] || fail "small: --max-memory 1M: exit $rc, want 2"
grep -q "^rotor: error: small.txt:2: rating 2 is more than the 1 that --max-memory leaves room for; nothing written" err.small ||
    fail "small: refusal message: $(cat err.small)"
[ ! -e q.small ] || fail "small: refusal left a plan"
echo "ok mf: a limit below what is held refused at the second rating"

# A file whose first lines are shorter than the rest (sorted by user, ids
# growing in digits): the reader's estimate at line 20000 overshoots the
# count (4x here), which is only a note; near the limit (1.2 x the printed
# estimate) the file fits and is read whole (rev27 F7, F9); just below the
# estimate it is refused once read; far below, as read at FILE:LINE.
awk 'BEGIN { for (i = 1; i <= 20000; i++) printf "%d %d 3\n", i % 97, i % 89;
             for (i = 1; i <= 100000; i++)
                 printf "%d %d 3.000000000000000000000000000000\n", 1000 + i % 2000, 500 + i % 700 }' >skew.txt
skew=(partition --input skew.txt --nodes 1 --threads 2)
"$ROTOR" "${skew[@]}" --out p.skew 2>log.skew || fail "skew: $(cat log.skew)"
est=$(estimate_kib log.skew)
[ -n "$est" ] && [ "$est" -gt 0 ] || fail "skew: estimate not found: $(cat log.skew)"
"$ROTOR" "${skew[@]}" --out p.skew12 --max-memory $((est * 6 / 5))K 2>log.skew12 ||
    fail "skew: refused at 1.2 x its estimate $est KiB: $(cat log.skew12)"
grep -q "skew.txt:20000: about [0-9]* ratings expected .*the read stops if it reaches them" log.skew12 ||
    fail "skew: the reader's estimate is not above the budget (no overshoot tested): $(cat log.skew12)"
grep -q "within --max-memory" log.skew12 && [ -f p.skew12/plan.json ] || fail "skew: no plan at 1.2 x"
set +e
"$ROTOR" "${skew[@]}" --out q.skew --max-memory $((est * 19 / 20))K 2>err.skew
rc=$?
"$ROTOR" "${skew[@]}" --out q.skew --max-memory $((est / 4))K 2>err.skew4
rc4=$?
set -e
[ $rc -eq 2 ] && [ $rc4 -eq 2 ] || fail "skew below its estimate: exit $rc / $rc4, want 2"
grep -q "^rotor: error: skew.txt: the plan needs about .* held after reading 120000 ratings.*; nothing written" err.skew ||
    fail "skew at 0.95 x: $(cat err.skew)"
grep -q "^rotor: error: skew.txt:[0-9]*: rating [0-9]* is more than the [0-9]* that --max-memory leaves room for; nothing written" err.skew4 ||
    fail "skew at 0.25 x: $(cat err.skew4)"
[ ! -e q.skew ] && [ -z "$(find . -name '*.tmp*')" ] || fail "skew: refusal left files behind"
echo "ok skewed ratings: a run at 1.2 x the estimate passes, 0.95 x and 0.25 x refused"

# A --test file is counted too, against what the training file leaves: at
# 1.2 x the training file's own estimate the training file fits and the
# 600000 test ratings (about 21 MB as read) do not. The limit comes from that
# estimate, not a constant: a sanitizer build holds tens of MB more before it
# reads (the CI refused small.txt itself at half the skewed file's estimate).
"$ROTOR" partition --input small.txt --nodes 2 --threads 2 --out p.small 2>log.small ||
    fail "small: $(cat log.small)"
est_small=$(estimate_kib log.small)
[ -n "$est_small" ] && [ "$est_small" -gt 0 ] || fail "small: estimate not found: $(cat log.small)"
set +e
"$ROTOR" partition --input small.txt --test r.txt --nodes 2 --threads 2 --out q.test \
    --max-memory $((est_small * 6 / 5))K 2>err.test
rc=$?
set -e
[ $rc -eq 2 ] || fail "test file: exit $rc, want 2: $(cat err.test)"
grep -q "^rotor: error: r.txt:[0-9]*: rating [0-9]* is more than the [0-9]* that --max-memory leaves room for; nothing written" err.test ||
    fail "test file: $(cat err.test)"
[ ! -e q.test ] || fail "test file: refusal left a plan"
echo "ok a --test file is counted as read"

# --verify estimates nothing: the pair is refused.
set +e
"$ROTOR" partition --verify p.skew --max-memory 1G 2>err.verify
rc=$?
set -e
[ $rc -eq 2 ] && grep -q "^rotor: error: partition: --verify and --max-memory: --verify reads a plan and estimates no memory; give one of them" err.verify ||
    fail "--verify --max-memory: exit $rc: $(cat err.verify)"

# The size is parsed strictly: one binary suffix, digits only, above 0.
for bad in 4GB 1.5G 0 -1 " 4G" 4g 4Gi 99999999999999999999 20000000000T; do
    set +e
    "$ROTOR" partition --input r.txt --nodes 1 --threads 1 --out bad --max-memory "$bad" 2>err
    rc=$?
    set -e
    [ $rc -eq 2 ] || fail "--max-memory '$bad': exit $rc, want 2"
    grep -q -- "--max-memory: want a size in bytes above 0.*got '$bad'" err ||
        fail "--max-memory '$bad': message: $(cat err)"
    [ ! -e bad ] || fail "--max-memory '$bad' wrote a plan"
done
for good in 1T 3000000000 64k 64K; do
    "$ROTOR" partition --input r.txt --nodes 1 --threads 1 --out good --force --max-memory $good \
        2>err || true
    grep -q -- "--max-memory: want" err && fail "--max-memory $good refused as a size"
done
echo "ok --max-memory parsing"
