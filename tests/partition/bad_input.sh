#!/bin/bash
# Bad input to `rotor partition`: exit status 2, ONE line
# "rotor: error: FILE:LINE: what", and no plan directory (or temporary) left.
source "$(dirname "$0")/../e2e/lib.sh"
cd "$TMP"
fails=0

# expect_fail NAME PATTERN -- ARGS...: rc 2, one stderr line matching PATTERN, no plan.
expect_fail() {
    local name=$1 pattern=$2
    shift 3
    rm -rf plan plan.tmp-* err
    local rc=0 lines
    ROTOR_LOG=warn "$ROTOR" partition "$@" --nodes 2 --threads 1 --out plan 2>err || rc=$?
    lines=$(wc -l <err)
    if [ $rc -ne 2 ]; then
        echo "FAIL $name: exit status $rc, want 2"; fails=$((fails + 1))
    elif [ "$lines" -ne 1 ] || ! grep -Eq "^rotor: error: $pattern" err; then
        echo "FAIL $name: stderr does not match '$pattern':"; cat err; fails=$((fails + 1))
    elif [ -e plan ] || compgen -G 'plan.tmp-*' >/dev/null; then
        echo "FAIL $name: a plan directory was left behind"; fails=$((fails + 1))
    else
        echo "ok   $name: $(cat err)"
    fi
}

# expect_verify_fails NAME DIR PATTERN: `partition --verify DIR` exits 2 and
# its stderr matches PATTERN.
expect_verify_fails() {
    local name=$1 rc=0
    "$ROTOR" partition --verify "$2" >/dev/null 2>err || rc=$?
    if [ $rc -ne 2 ] || ! grep -q "$3" err; then
        echo "FAIL $name: rc $rc"; cat err; fails=$((fails + 1))
    else
        echo "ok   $name: $(cat err)"
    fi
}

printf '1 1 5\n1 2 4\n2 1 3 99\n2 2\n' >fields.txt
expect_fail malformed 'fields.txt:4: expected 3 or 4 fields' -- --input fields.txt
printf '1 1 5\n2 2 four\n' >nonnum.txt
expect_fail non-numeric 'nonnum.txt:2: rating .four. is not a number' -- --input nonnum.txt
printf 'userId,movieId,rating\n1,1,5\n2,2,NaN\n' >nan.csv
expect_fail nan-rating 'nan.csv:3: rating .NaN. is NaN or infinite' -- --input nan.csv
printf '1::1::5\n2::2::inf\n' >inf.dat
expect_fail inf-rating 'inf.dat:2: rating .inf. is NaN or infinite' -- --input inf.dat
printf '%%%%MatrixMarket matrix coordinate real general\n%% c\n3 4 3\n1 1 1\n3 5 2\n2 2 1\n' >beyond.mtx
expect_fail mm-beyond-header 'beyond.mtx:5: column id 5 outside the header' -- --input beyond.mtx
printf '%%%%MatrixMarket matrix coordinate real general\n3 4 3\n1 1 1\n' >count.mtx
expect_fail mm-count 'count.mtx:2: the header declares 3 entries but the file has 1' -- --input count.mtx
: >empty.txt
expect_fail empty-input 'empty.txt:1: empty input' -- --input empty.txt
printf '# only a comment\n\n' >blank.txt
expect_fail comments-only 'blank.txt:2: empty input' -- --input blank.txt
printf '1 1 5\n2 2 4\n' >good.txt
printf '1 1 5\n2 x\n' >badtest.txt
expect_fail bad-test-file 'badtest.txt:2: expected 3 or 4 fields' -- --input good.txt --test badtest.txt
expect_fail missing-file 'nosuch.txt: cannot open' -- --input nosuch.txt
expect_fail bad-format "--format: 'xml' is not one of auto, triplets" -- --input good.txt --format xml
expect_fail both-tests 'partition: --test and --test-fraction' -- --input good.txt --test good.txt --test-fraction 0.1

# An existing output directory that is no plan is refused, with or without
# --force, and left alone; the message does not suggest --force (it did, and
# --force then refused it too).
mkdir plan2 && echo keep >plan2/file
rc=0
"$ROTOR" partition --input good.txt --nodes 1 --threads 1 --out plan2 2>err || rc=$?
if [ $rc -ne 2 ] || ! grep -q 'plan2: exists and is not a plan directory' err || grep -q -- --force err ||
    [ "$(cat plan2/file)" != keep ]; then
    echo "FAIL existing-dir: rc $rc"; cat err; fails=$((fails + 1))
else
    echo "ok   existing-dir"
fi

# Truncated / corrupted shards: --verify fails with status 2 naming the file.
"$ROTOR" partition --input good.txt --nodes 2 --threads 1 --out okplan 2>/dev/null || {
    echo "FAIL: could not make a plan"; exit 1; }
"$ROTOR" partition --verify okplan >/dev/null || { echo "FAIL: fresh plan does not verify"; exit 1; }
cp -r okplan flipped
size=$(stat -c %s flipped/shard-00001.bin)
# a byte inside the first section (72-byte header + 4 x 32-byte table, aligned to 256)
printf '\x7f' | dd of=flipped/shard-00001.bin bs=1 seek=260 conv=notrunc 2>/dev/null
expect_verify_fails corrupted-shard flipped 'flipped/shard-00001.bin: section 10: section checksum mismatch'
cp -r okplan padded
printf '\x01' | dd of=padded/shard-00001.bin bs=1 seek=$((size - 3)) conv=notrunc 2>/dev/null
expect_verify_fails corrupted-padding padded 'padded/shard-00001.bin: .*corrupted padding'
cp -r okplan cut
truncate -s $((size - 8)) cut/shard-00000.bin
expect_verify_fails truncated-shard cut 'cut/shard-00000.bin: .*truncated'

[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "all bad-input cases ok"
