#!/bin/bash
# '-' for standard input and output: gen mf --out - writes the same ratings as
# a file; partition --input - reads them from a pipe and writes the same plan
# as from the file (format guessed from the pipe); errors name "standard
# input"; nothing but data reaches standard output; on a terminal the
# progress bar is drawn on stderr.
source "$(dirname "$0")/../e2e/lib.sh"
cd "$TMP"
export ROTOR_LOG=warn

"$ROTOR" gen mf --rows 3000 --cols 800 --nnz 60000 --seed 3 --out g.txt || fail "gen mf to file"
"$ROTOR" gen mf --rows 3000 --cols 800 --nnz 60000 --seed 3 --out - >g.stdout 2>gen.err ||
    fail "gen mf --out -"
cmp -s g.txt g.stdout || fail "gen mf --out - differs from the file"
[ ! -e ./-.truth.json ] || fail "gen mf --out - wrote a truth file named '-'"
expect_status 2 "$ROTOR" gen mf --rows 30 --cols 8 --nnz 60 --out - --test-out - --test-fraction 0.1

"$ROTOR" partition --input g.txt --nodes 2 --threads 1 --test-fraction 0.1 --out pf ||
    fail "partition from a file"
for fmt in txt csv; do
    if [ $fmt = csv ]; then
        src() { awk 'BEGIN {print "user,item,rating"} {print $1 "," $2 "," $3}' g.txt; }
    else
        src() { cat g.txt; }
    fi
    src | "$ROTOR" partition --input - --nodes 2 --threads 1 --test-fraction 0.1 \
        --out p-$fmt >out-$fmt 2>err-$fmt || { cat err-$fmt; fail "partition --input - ($fmt)"; }
    [ ! -s out-$fmt ] || fail "partition wrote to standard output: $(head -2 out-$fmt)"
    for f in layout.bin shard-00000.bin shard-00001.bin rows.ids cols.ids; do
        cmp -s pf/$f p-$fmt/$f || fail "plan from standard input ($fmt) differs in $f"
    done
done
echo "ok partition --input - (triplets and csv guessed from a pipe)"

printf '1 2 3\n2 1 x\n' | expect_status 2 "$ROTOR" partition --input - --nodes 1 --threads 1 --out bad
grep -q '^rotor: error: standard input:2: rating .x. is not a number' "$TMP/last.err" ||
    fail "error message: $(cat "$TMP/last.err")"
[ ! -e bad ] || fail "a failed partition left its output directory"
expect_status 2 "$ROTOR" partition --input - --test - --nodes 1 --threads 1 --out bad </dev/null
echo "ok bad standard input"

# A terminal on stderr gets a progress bar (redrawn with '\r') once a step
# has run for a second; the data on stdout is untouched.
if command -v script >/dev/null; then
    head -30000 g.txt >a.txt
    tail -n +30001 g.txt >b.txt
    cat >slow.sh <<EOS
{ cat a.txt; sleep 1.5; cat b.txt; } | ROTOR_LOG=info "$ROTOR" partition --input - --nodes 2 \
    --threads 1 --test-fraction 0.1 --out p-tty
EOS
    script -qec "bash slow.sh" /dev/null >tty.out </dev/null || fail "partition under a terminal"
    grep -q $'\r''rotor: reading standard input  [0-9.]* MB  [0-9.]* MB/s' tty.out ||
        fail "no progress bar on a terminal: $(tr '\r' '|' <tty.out | head -5)"
    cmp -s pf/shard-00000.bin p-tty/shard-00000.bin || fail "plan under a terminal differs"
    sed -i 's/--out p-tty/--out p-quiet --quiet/' slow.sh
    script -qec "bash slow.sh" /dev/null >quiet.out </dev/null || fail "partition --quiet"
    [ ! -s quiet.out ] || fail "--quiet still shows: $(tr '\r' '|' <quiet.out | head -3)"
    echo "ok progress bar on a terminal"
else
    note "script(1) not installed: terminal progress not checked"
fi

# A corpus from a pipe is the corpus of its file. The format guess reads the
# first 64 KiB in place, and it turned a "\r\n" cut at that point (bytes
# 65535 and 65536) into two line ends: from the pipe, every later line
# number and each lda-c document's name (its line) was one more than from
# the file. Here line 9362's "\r" is byte 65535.
printf '1 0:1\r\n%.0s' $(seq 9361) >crlf.ldac
printf '1 0:1   \r\n1 1:2\r\n' >>crlf.ldac
"$ROTOR" partition --app lda --input crlf.ldac --nodes 1 --threads 1 --out lf ||
    fail "partition a CRLF lda-c corpus from its file"
"$ROTOR" partition --app lda --input - --nodes 1 --threads 1 --out lp <crlf.ldac ||
    fail "partition a CRLF lda-c corpus from a pipe"
cmp -s lf/rows.ids lp/rows.ids ||
    fail "lda-c documents from a pipe are named otherwise: $(cmp lf/rows.ids lp/rows.ids)"
printf '2 0:1\r\n' >>crlf.ldac
expect_status 2 "$ROTOR" partition --app lda --input crlf.ldac --nodes 1 --threads 1 --out bad
grep -q 'crlf.ldac:9364: line says 2 pairs' "$TMP/last.err" || fail "file: $(cat "$TMP/last.err")"
expect_status 2 "$ROTOR" partition --app lda --input - --nodes 1 --threads 1 --out bad <crlf.ldac
grep -q 'standard input:9364: line says 2 pairs' "$TMP/last.err" ||
    fail "a pipe counts its lines otherwise: $(cat "$TMP/last.err")"
echo "ok a CRLF corpus from a pipe (a line end cut at the format guess's 64 KiB)"
