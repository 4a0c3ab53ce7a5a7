#!/usr/bin/env bash
# Paths with spaces and a byte that is no UTF-8 (a Latin-1 file name): every
# step works, and the JSON files that record a path (plan.json's inputs and
# command_line, model.json's plan, infer.json's input) keep it readable with
# U+FFFD for the byte.  jansson's json_string gives NULL for such a string:
# plan.json lost its inputs and command line, an MF model its plan, and an
# LDA model or an infer run was trained and then not saved ("lda save:
# cannot build model.json").
source "$(dirname "$0")/lib.sh"
cd "$TMP"
L1=$(printf '\xe9') # Latin-1 e-acute: a byte no UTF-8 text starts with
R1=$(printf '\xef\xbf\xbd') # U+FFFD, what JSON keeps of it
D="dir with spaces $L1"
mkdir "$D"

"$ROTOR" gen mf --rows 60 --cols 30 --nnz 700 --rank 2 --seed 4 --out "$D/r $L1.txt" 2>/dev/null
expect_status 0 "$ROTOR" partition --input "$D/r $L1.txt" --nodes 1 --threads 1 --out "$D/plan $L1"
python3 - "$D/plan $L1/plan.json" <<'PY' || fail "plan.json lacks a recorded path"
import json, sys
p = json.load(open(sys.argv[1], 'rb'))
assert p["inputs"] and p["inputs"][0]["path"].endswith("r \ufffd.txt"), p["inputs"]
assert "plan \ufffd" in p["command_line"], p.get("command_line")
PY
expect_status 0 "$ROTOR" train --plan "$D/plan $L1" --rank 2 --epochs 1 --out "$D/model $L1"
grep -q "\"plan\": \".*plan $R1\"" "$D/model $L1/model.json" || fail "model.json lacks its plan"
expect_status 0 "$ROTOR" eval --model "$D/model $L1" --input "$D/r $L1.txt"
# the plan's name was not kept byte for byte: recommend says which one it looked for,
# and why no file has that name (rev23 F6: it said only "cannot be opened")
expect_status 2 "$ROTOR" recommend --model "$D/model $L1" --top 2 --out "$D/recs"
grep -q "its plan's path, recorded as .*plan $R1, had bytes that are not UTF-8" "$TMP/last.err" ||
    fail "recommend: $(cat "$TMP/last.err")"

"$ROTOR" gen lda --docs 30 --vocab 40 --topics 2 --doc-len 12 --seed 3 --out "$D/d $L1.txt" 2>/dev/null
expect_status 0 "$ROTOR" partition --app lda --input "$D/d $L1.txt" --nodes 1 --threads 1 \
    --out "$D/lda $L1"
expect_status 0 "$ROTOR" train --app lda --plan "$D/lda $L1" --topics 2 --iters 3 --out "$D/lm $L1"
[ -f "$D/lm $L1/model.json" ] || fail "lda model not saved"
expect_status 0 "$ROTOR" infer --model "$D/lm $L1" --input "$D/d $L1.txt" --out "$D/inf $L1"
grep -q "\"input\": \".*d $R1.txt\"" "$D/inf $L1/infer.json" || fail "infer.json lacks its input"
echo "odd paths: ok"
