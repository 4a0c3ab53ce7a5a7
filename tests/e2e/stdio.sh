#!/usr/bin/env bash
# '-' for standard input and output: `rotor gen mf --out - | rotor partition
# --input -` writes the same shards as partitioning the file (the format
# guessed from the piped lines), a corpus piped into `partition --app lda
# --input -` too (and through a named pipe); standard output of `gen mf --out -` carries only ratings,
# of `gen lda --out -` only the corpus.
source "$(dirname "$0")/lib.sh"
"$ROTOR" gen mf --rows 300 --cols 200 --nnz 6000 --rank 3 --seed 2 --out "$TMP/r.txt" >/dev/null
"$ROTOR" gen mf --rows 300 --cols 200 --nnz 6000 --rank 3 --seed 2 --out - >"$TMP/r-stdout.txt" 2>"$TMP/gen.err"
cmp -s "$TMP/r.txt" "$TMP/r-stdout.txt" || fail "gen mf --out - differs from --out FILE"
part=(partition --nodes 2 --threads 2 --test-fraction 0.1 --seed 5 -q)
"$ROTOR" "${part[@]}" --input "$TMP/r.txt" --out "$TMP/p-file" >/dev/null || fail "partition FILE"
"$ROTOR" gen mf --rows 300 --cols 200 --nnz 6000 --rank 3 --seed 2 --out - 2>/dev/null |
    "$ROTOR" "${part[@]}" --input - --out "$TMP/p-pipe" >/dev/null || fail "partition --input -"
for f in "$TMP"/p-file/shard-*.bin "$TMP/p-file/rows.ids" "$TMP/p-file/cols.ids" "$TMP/p-file/layout.bin"; do
    cmp -s "$f" "$TMP/p-pipe/$(basename "$f")" || fail "$(basename "$f") differs when the ratings come from a pipe"
done

"$ROTOR" gen lda --docs 300 --vocab 200 --topics 4 --doc-len 30 --seed 2 --out "$TMP/c.txt" >/dev/null
# gen lda --out - carries only the corpus (its summary line ended it), and
# writes no "-.topics.npy" ... companions into the working directory
(cd "$TMP" && "$ROTOR" gen lda --docs 300 --vocab 200 --topics 4 --doc-len 30 --seed 2 --out - \
    >c-stdout.txt 2>/dev/null) || fail "gen lda --out -"
cmp -s "$TMP/c.txt" "$TMP/c-stdout.txt" || fail "gen lda --out - differs from --out FILE"
[ ! -e "$TMP/-.topics.npy" ] || fail "gen lda --out - wrote -.topics.npy"
lpart=(partition --app lda --nodes 1 --threads 2 --test-fraction 0.1 --seed 5 -q)
"$ROTOR" "${lpart[@]}" --input "$TMP/c.txt" --out "$TMP/l-file" >/dev/null || fail "partition corpus FILE"
"$ROTOR" "${lpart[@]}" --input - --out "$TMP/l-pipe" <"$TMP/c.txt" >/dev/null 2>"$TMP/l.err" ||
    { cat "$TMP/l.err"; fail "partition --app lda --input -"; }
for f in "$TMP"/l-file/shard-*.bin "$TMP/l-file/vocab.txt" "$TMP/l-file/lda.words"; do
    cmp -s "$f" "$TMP/l-pipe/$(basename "$f")" || fail "$(basename "$f") differs when the corpus comes from a pipe"
done
# A named pipe (`--input <(xzcat docword.txt.xz)`) gives its bytes once, like
# standard input: the format guess read its head and the reader started past
# it ("expected the document count of the docword header").
"$ROTOR" "${lpart[@]}" --input <(cat "$TMP/c.txt") --out "$TMP/l-fifo" >/dev/null 2>"$TMP/l.err" ||
    { cat "$TMP/l.err"; fail "partition --app lda --input <(cat FILE)"; }
for f in "$TMP"/l-file/shard-*.bin "$TMP/l-file/vocab.txt" "$TMP/l-file/lda.words"; do
    cmp -s "$f" "$TMP/l-fifo/$(basename "$f")" || fail "$(basename "$f") differs when the corpus comes from a named pipe"
done

# An output path that is a FIFO or a device (/dev/null) is written in place,
# never replaced: a rename over it replaced the node with a regular file
# (as root, /dev/null itself).
mkfifo "$TMP/fifo"
cat "$TMP/fifo" >"$TMP/from-fifo" &
reader=$!
"$ROTOR" gen mf --rows 30 --cols 20 --nnz 200 --rank 2 --seed 2 --out "$TMP/fifo" 2>/dev/null ||
    fail "gen mf --out FIFO"
[ -p "$TMP/fifo" ] || { kill "$reader" 2>/dev/null; fail "gen mf --out FIFO replaced the FIFO"; }
wait "$reader"
[ "$(wc -l <"$TMP/from-fifo")" = 200 ] || fail "gen mf --out FIFO: $(wc -l <"$TMP/from-fifo") lines read"
# (and its truth file is not made beside it: /dev/null.truth.json, as root)
[ ! -e "$TMP/fifo.truth.json" ] || fail "gen mf --out FIFO wrote fifo.truth.json"
echo PASS
