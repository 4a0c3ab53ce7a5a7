#!/usr/bin/env bash
# export.sh - rotor export of sharded models.
#  - npy: W.npy / H.npy are 2-D float32 .npy files of the model's shape
#    (numpy.load where numpy is installed, the header parsed by hand
#    otherwise), the same bytes whatever --memory (one pass or many), and
#    the exported directory is a model eval scores exactly like the parts;
#  - libmf: LIBMF's model text predicts what rotor eval measures (RMSE
#    recomputed from model.txt with awk, biases folded into two columns);
#  - text: one line per row, headed by the original ids;
#  - lda: topic_word.npy rows are distributions, rotor topics on the export
#    prints what it prints on the parts, libmf is refused.
source "$(dirname "$0")/lib.sh"

small_plans
"$ROTOR" launch -n 2 -- "$ROTOR" train --plan "$TMP/mfplan" --app sgd-mf --rank 6 --epochs 3 \
    --seed 3 --out "$TMP/m" 2>/dev/null || fail "train sgd-mf"
"$ROTOR" launch -n 2 -- "$ROTOR" train --plan "$TMP/ldaplan" --app lda --topics 8 --iters 4 \
    --seed 3 --out "$TMP/l" 2>/dev/null || fail "train lda"

note "npy"
"$ROTOR" export --model "$TMP/m" --out "$TMP/x" --quiet || fail "export"
"$ROTOR" export --model "$TMP/m" --out "$TMP/x1" --memory 1 --quiet || fail "export --memory 1"
for f in W.npy H.npy row_bias.npy col_bias.npy rows.ids cols.ids; do
    cmp -s "$TMP/x/$f" "$TMP/x1/$f" || fail "$f differs between --memory 256 and --memory 1"
done
check_npy() { # check_npy FILE ROWS COLS
    python3 - "$@" <<'PY' || fail "$1 is not a ($2, $3) float32 .npy"
import sys, ast, struct
path, rows, cols = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
try:
    import numpy
    a = numpy.load(path)
    assert a.shape == (rows, cols) and a.dtype == numpy.float32, (a.shape, a.dtype)
    print("numpy.load:", path.rsplit("/", 1)[1], a.shape, a.dtype)
except ImportError:
    b = open(path, "rb").read()
    assert b[:8] == b"\x93NUMPY\x01\x00"
    n = struct.unpack("<H", b[8:10])[0]
    d = ast.literal_eval(b[10:10 + n].decode("latin1"))
    assert d == {"descr": "<f4", "fortran_order": False, "shape": (rows, cols)}, d
    assert len(b) == 10 + n + rows * cols * 4 and (10 + n) % 64 == 0
    print("header (no numpy):", path.rsplit("/", 1)[1], d["shape"])
PY
}
check_npy "$TMP/x/W.npy" 600 6
check_npy "$TMP/x/H.npy" 300 6
"$ROTOR" eval --model "$TMP/m" --input "$TMP/mf_test.txt" >"$TMP/e.parts" 2>/dev/null
"$ROTOR" eval --model "$TMP/x" --input "$TMP/mf_test.txt" >"$TMP/e.single" 2>/dev/null
diff "$TMP/e.parts" "$TMP/e.single" >&2 || fail "eval of the export differs from eval of the parts"
expect_status 2 "$ROTOR" export --model "$TMP/x" --out "$TMP/xx"
grep -q "single-file model already" "$TMP/last.err" || fail "export of an export: $(cat "$TMP/last.err")"

note "libmf"
"$ROTOR" export --model "$TMP/m" --out "$TMP/lib" --format libmf --quiet || fail "export libmf"
head -5 "$TMP/lib/model.txt" | tr '\n' ' ' | grep -q '^f 0 m 600 n 300 k 8 b ' ||
    fail "libmf header: $(head -5 "$TMP/lib/model.txt" | tr '\n' ' ')"
rmse=$(awk -v RS='\n' '
    FILENAME == ARGV[1] { if ($1 == "b") b = $2; else if ($2 == "T") { v[$1] = $0 }; next }
    FILENAME == ARGV[2] { row[$1] = FNR - 1; next }
    FILENAME == ARGV[3] { col[$1] = FNR - 1; next }
    ($1 in row) && ($2 in col) {
        split(v["p" row[$1]], p, " "); split(v["q" col[$2]], q, " ")
        s = b; for (i = 3; i in p; i++) s += p[i] * q[i]
        e = s - $3; se += e * e; n++
    }
    END { printf "%.5f", sqrt(se / n) }' "$TMP/lib/model.txt" "$TMP/x/rows.ids" "$TMP/x/cols.ids" \
    "$TMP/mf_test.txt")
want=$(grep -o 'rmse [0-9.]*' "$TMP/e.parts" | awk '{printf "%.5f", $2}')
note "RMSE from LIBMF's model text $rmse, rotor eval $want"
[ "$rmse" = "$want" ] || fail "the libmf model predicts RMSE $rmse, rotor eval says $want"

note "text"
"$ROTOR" export --model "$TMP/m" --out "$TMP/t" --format text --quiet || fail "export text"
[ "$(wc -l <"$TMP/t/W.txt")" = 600 ] || fail "W.txt: expected 600 lines"
diff <(cut -d' ' -f1 "$TMP/t/H.txt") "$TMP/x/cols.ids" >&2 || fail "H.txt ids are not cols.ids"
[ "$(head -1 "$TMP/t/W.txt" | wc -w)" = 7 ] || fail "W.txt: expected id + 6 values"

note "lda"
"$ROTOR" export --model "$TMP/l" --out "$TMP/lx" --quiet || fail "export lda"
python3 - "$TMP/lx/topic_word.npy" <<'PY' || fail "topic_word.npy rows are not distributions"
import sys, struct
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<H", b[8:10])[0]
vals = struct.unpack("<%df" % ((len(b) - 10 - n) // 4), b[10 + n:])
V = 400
for k in range(len(vals) // V):
    s = sum(vals[k * V:(k + 1) * V])
    assert abs(s - 1) < 1e-3, (k, s)
PY
diff <("$ROTOR" topics --model "$TMP/l" --top 7) <("$ROTOR" topics --model "$TMP/lx" --top 7) >&2 ||
    fail "rotor topics differs between the parts and the export"
"$ROTOR" export --model "$TMP/l" --out "$TMP/lt" --format text --quiet || fail "export lda text"
[ "$(wc -l <"$TMP/lt/word_topic.txt")" = 400 ] || fail "word_topic.txt: expected 400 lines"
expect_status 2 "$ROTOR" export --model "$TMP/l" --out "$TMP/ll" --format libmf
[ ! -e "$TMP/ll" ] || fail "a refused export left $TMP/ll"
echo PASS
