#!/bin/bash
# rotor plot: two SGD-MF runs and a CD-MF run (--metrics files) drawn as a
# PNG and an SVG of the requested size, legends from the runs' settings;
# bad metrics files are FILE:LINE errors; without gnuplot one line names the
# package to install and nothing is written.
source "$(dirname "$0")/lib.sh"
cd "$TMP"
export ROTOR_LOG=warn

"$ROTOR" gen mf --rows 1500 --cols 400 --nnz 30000 --rank 4 --seed 2 --out m.txt \
    --test-out m.test --test-fraction 0.1
"$ROTOR" partition --input m.txt --test m.test --nodes 1 --threads 2 --out plan
for lr in 0.02 0.05; do
    "$ROTOR" train --plan plan --app sgd-mf --rank 4 --epochs 8 --lr $lr --serial \
        --metrics sgd-$lr.json >/dev/null 2>&1 || fail "train sgd-mf lr $lr"
done
"$ROTOR" train --plan plan --app cd-mf --rank 4 --outer 3 --serial --metrics cd.json \
    >/dev/null 2>&1 || fail "train cd-mf"
grep -q '"elapsed_s"' cd.json || fail "metrics records have no elapsed_s"

# without gnuplot on PATH: one line naming the package, no picture
expect_status 1 env PATH=/nonexistent "$ROTOR" plot sgd-0.02.json --out none.png
grep -q 'apt-get install gnuplot-nox' "$TMP/last.err" || fail "no install hint: $(cat "$TMP/last.err")"
[ "$(wc -l <"$TMP/last.err")" -eq 1 ] || fail "more than one line: $(cat "$TMP/last.err")"
[ -z "$(ls none.png* 2>/dev/null)" ] || fail "a picture was left without gnuplot"

echo '{"app": "sgd-mf", "config": {}}' >notmetrics.json
expect_status 2 "$ROTOR" plot notmetrics.json --out x.png
grep -q 'notmetrics.json: not a metrics file' "$TMP/last.err" || fail "$(cat "$TMP/last.err")"
printf '{"app": "sgd-mf",\n "config": {,\n' >broken.json
expect_status 2 "$ROTOR" plot broken.json --out x.png
grep -q 'broken.json:2:' "$TMP/last.err" || fail "no FILE:LINE: $(cat "$TMP/last.err")"
expect_status 2 "$ROTOR" plot sgd-0.02.json --out x.jpg
expect_status 2 "$ROTOR" plot sgd-0.02.json --out x.png --y no_such_key
grep -q "no epoch record has both 'no_such_key'" "$TMP/last.err" || fail "$(cat "$TMP/last.err")"
[ -z "$(ls x.* 2>/dev/null)" ] || fail "a failed plot left a file"
echo "ok errors"

command -v gnuplot >/dev/null || skip "gnuplot not installed (Debian package gnuplot-nox)"

# PNG: signature and IHDR width/height (big-endian u32 at bytes 16 and 20)
"$ROTOR" plot sgd-0.02.json sgd-0.05.json --out curves.png --size 640x400 >plot.out ||
    fail "plot png"
[ ! -s plot.out ] || fail "plot wrote to standard output"
[ "$(od -An -tx1 -N8 curves.png | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "not a PNG"
read -r w0 w1 w2 w3 h0 h1 h2 h3 < <(od -An -tu1 -j16 -N8 curves.png)
w=$(((w0 << 24) | (w1 << 16) | (w2 << 8) | w3))
h=$(((h0 << 24) | (h1 << 16) | (h2 << 8) | h3))
[ "$w" = 640 ] && [ "$h" = 400 ] || fail "PNG is ${w}x${h}, expected 640x400"
[ "$(od -An -c -j12 -N4 curves.png | tr -d ' \n')" = IHDR ] || fail "PNG without IHDR first"
echo "ok png ${w}x${h}"

# SVG: size attributes, one legend entry per curve from the differing settings
"$ROTOR" plot sgd-0.02.json sgd-0.05.json cd.json --out curves.svg --x seconds \
    --y train_rmse,test_rmse --title "it's \"rotor\"" || fail "plot svg"
head -c 300 curves.svg | grep -q '<svg' || fail "not an SVG"
grep -q 'width="800" height="500"' curves.svg || fail "SVG size: $(grep -m1 width= curves.svg)"
for t in 'sgd-mf lr=0.02' 'sgd-mf lr=0.05' 'cd-mf' 'test_rmse' 'seconds' "it's"; do
    grep -q "$t" curves.svg || fail "SVG lacks '$t'"
done
[ "$(grep -c '<title>' curves.svg)" -ge 6 ] || fail "expected 6 curves"
echo "ok svg"

# A metrics file an editor saved with a UTF-8 byte order mark and CRLF lines
# reads as the one rotor wrote (it was refused: "'[' or '{' expected near
# '\xef\xbb\xbf'"); the files may follow "--" and the options.
{ printf '\357\273\277'; sed 's/$/\r/' sgd-0.02.json; } >edited.json
"$ROTOR" plot --out edited.svg -- edited.json || fail "plot of an editor-saved metrics file"
grep -q 'sgd-mf' edited.svg || fail "the edited file's curve is missing"
echo "ok byte order mark"

# gnuplot's own messages (one epoch: "empty x range") come out as rotor lines
"$ROTOR" train --plan plan --app sgd-mf --rank 4 --epochs 1 --serial --metrics one.json \
    >/dev/null 2>&1 || fail "train one epoch"
ROTOR_LOG=info "$ROTOR" plot one.json --out one.png 2>one.err || fail "plot one epoch"
grep -q 'gnuplot: .*empty x range' one.err || fail "gnuplot's warning not relayed: $(cat one.err)"
if grep -v '^rotor: ' one.err; then fail "unprefixed lines on stderr"; fi
echo "ok gnuplot messages prefixed"

# --out replaces an earlier picture of its format, and nothing else (a
# metrics file or ratings under a mistyped name: they were overwritten)
"$ROTOR" plot sgd-0.02.json --out curves.png 2>/dev/null || fail "plot over its own earlier PNG"
"$ROTOR" plot sgd-0.02.json --out curves.svg 2>/dev/null || fail "plot over its own earlier SVG"
cp sgd-0.02.json keep.svg
expect_status 2 "$ROTOR" plot sgd-0.02.json --out keep.svg
cmp -s keep.svg sgd-0.02.json || fail "plot replaced a metrics file named keep.svg"
cp curves.svg keep.png
expect_status 2 "$ROTOR" plot sgd-0.02.json --out keep.png
echo "ok own kind"

# --out at a FIFO or a device is written in place, as every other output is
# (the picture was renamed over the FIFO: a reader waited forever, and the
# FIFO became a file)
mkfifo pipe.svg
timeout 60 cat pipe.svg >from-pipe.svg &
reader=$!
timeout 60 "$ROTOR" plot sgd-0.02.json --out pipe.svg || fail "plot into a FIFO"
wait "$reader" || fail "the FIFO's reader got no end of file"
[ -p pipe.svg ] || fail "plot replaced the FIFO with a file"
grep -q '</svg>' from-pipe.svg || fail "the FIFO's reader got no whole SVG"
ls | grep -q '\.tmp' && fail "plot left a temporary: $(ls | grep '\.tmp')"
echo "ok fifo"
