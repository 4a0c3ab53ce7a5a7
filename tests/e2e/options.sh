#!/usr/bin/env bash
# Every command's options come from one table (ground/opts.h): --help and -h
# print it, a value outside its range or an overflowing one is one line naming
# the option and the range with exit status 2, short forms and "--x=v" work.
source "$(dirname "$0")/lib.sh"

# Every command `rotor --help` lists (gen has two subcommands), so a new one
# cannot miss its help check.
commands=()
while read -r c; do
    if [ "$c" = gen ]; then commands+=("gen mf" "gen lda"); else commands+=("$c"); fi
done < <("$ROTOR" --help | awk '/^commands:/ { on = 1; next } on && NF == 0 { exit } on { print $1 }')
[ "${#commands[@]}" -ge 13 ] || fail "rotor --help lists only: ${commands[*]}"

# --help and -h: exit 0, the usage line and the -h entry on stdout, identical.
for c in "${commands[@]}"; do
    read -ra cmd <<<"$c"
    expect_status 0 "$ROTOR" "${cmd[@]}" --help
    grep -q "^usage: rotor $c " "$TMP/last.out" || fail "$c --help: no usage line"
    grep -q -- "-h, --help" "$TMP/last.out" || fail "$c --help: no -h entry"
    [ ! -s "$TMP/last.err" ] || fail "$c --help wrote to stderr: $(cat "$TMP/last.err")"
    cp "$TMP/last.out" "$TMP/help.txt"
    expect_status 0 "$ROTOR" "${cmd[@]}" -h
    cmp -s "$TMP/last.out" "$TMP/help.txt" || fail "$c: -h and --help differ"
    awk 'length > 100 { exit 1 }' "$TMP/help.txt" || fail "$c --help: a line over 100 columns"
    # An option table entry without a metavar shows the placeholder VALUE.
    ! grep -qE -- '--[a-z0-9-]+ VALUE' "$TMP/help.txt" || fail "$c --help: an option without a metavar"
done
# train --help lists every app's options.
"$ROTOR" train --help >"$TMP/train.txt"
for s in '^sgd-mf options' '^cd-mf options' '^lda options' -- '--epochs' '--outer' '--sampler'; do
    [ "$s" = -- ] && continue
    grep -q -- "$s" "$TMP/train.txt" || fail "train --help lacks $s"
done

# One table, two defaults: --peer-timeout is 8 s for train and 60 s for
# bench-link, and each --help says its own (it said none), not a value given
# before --help.
"$ROTOR" train --help | tr -s ' \n' ' ' >"$TMP/train1.txt"
grep -q -- '--peer-timeout S a peer .* 0..2000000; default 8)' "$TMP/train1.txt" ||
    fail "train --help: --peer-timeout shows no default 8"
"$ROTOR" bench-link --peer-timeout 3 --help | tr -s ' \n' ' ' >"$TMP/bench1.txt"
grep -q -- '--peer-timeout S a peer .* 0..2000000; default 60)' "$TMP/bench1.txt" ||
    fail "bench-link --help: --peer-timeout shows no default 60"

# bad CMD... =: WANT: exit 2 and one stderr line containing WANT.
bad() {
    local args=() want
    while [ "$1" != =: ]; do args+=("$1"); shift; done
    want=$2
    expect_status 2 "$ROTOR" "${args[@]}"
    [ "$(wc -l <"$TMP/last.err")" = 1 ] || fail "${args[*]}: not one line: $(cat "$TMP/last.err")"
    grep -qF -- "$want" "$TMP/last.err" || fail "${args[*]}: want '$want', got: $(cat "$TMP/last.err")"
    note "${args[*]}: $(cat "$TMP/last.err")"
}

# A range error names the option and the range, for every command.
bad gen mf --rows 10 --cols 10 --nnz 20 --out "$TMP/x" --rank 0 =: "--rank: 0 is out of range 1..4096"
bad gen lda --docs 1 --vocab 1 --topics 1 --doc-len 1 --out "$TMP/x" =: "--topics: 1 is out of range 2..65535"
bad partition --input x --nodes 0 --threads 1 --out "$TMP/p" =: "--nodes: 0 is out of range 1..1048576"
bad partition --app lda --input x --nodes 1 --threads 1 --pipeline 0 --out "$TMP/p" =: "--pipeline: 0 is out of range 1..1024"
bad train --plan "$TMP/none" --rank 0 =: "--rank: 0 is out of range 1..4096"
bad train --plan "$TMP/none" --app cd-mf --inner 0 =: "--inner: 0 is out of range 1..1000000"
bad train --plan "$TMP/none" --app lda --mh-steps 1001 =: "--mh-steps: 1001 is out of range 1..1000"
bad train --plan "$TMP/none" --base-port 70000 =: "--base-port: 70000 is out of range 1..65535"
bad launch -n 0 -- true =: "--np: 0 is out of range 1..1024"
bad topics --model "$TMP/none" --top 0 =: "--top: 0 is out of range 1..1000000"
bad eval --model "$TMP/none" --input x --format xml =: "--format: 'xml' is not one of auto, triplets"
bad bench-link --iters 0 =: "--iters: 0 is out of range 1..100000000"
bad bench-link --max-size 2G =: "--max-size: 2G is out of range 1..1073741824"
bad simulate --rows 10 --cols 10 --nnz 100 --nodes 2 --rate 0 =: "--rate: 0 is out of range > 0"
bad train --plan "$TMP/none" --lr 0 =: "--lr: 0 is out of range > 0"
bad partition --input x --nodes 1 --threads 1 --out "$TMP/p" --test-fraction 1 =: "--test-fraction: 1 is out of range [0, 1)"

# Overflow and trailing garbage are errors, never a silent wrap or truncation.
bad train --plan "$TMP/none" --epochs 99999999999999999999 =: "--epochs: 99999999999999999999 is out of range"
bad train --plan "$TMP/none" --app lda --topics 4294967298 =: "--topics: 4294967298 is out of range"
bad partition --input x --nodes 1 --threads 2x --out "$TMP/p" =: "--threads: '2x' is not an integer"
bad gen mf --rows 10 --cols 10 --nnz 20 --out "$TMP/x" --noise 0.1.2 =: "--noise: '0.1.2' is not a finite decimal number"

# Unknown options: the closest name; another app's option: which app it is for.
bad train --plan "$TMP/none" --rnak 4 =: "unknown option --rnak: did you mean --rank?"
bad train --plan "$TMP/none" --outer 4 =: "--outer is an option of --app cd-mf, not of --app sgd-mf"
bad partition --input x --nodes 1 --threads 1 --out "$TMP/p" --vocab v =: "--vocab is a corpus option (--app lda)"
bad train --plan "$TMP/none" --rank =: "--rank needs a value (K)"
bad launch -n 2 =: "no command given"

# Every app's table composes with train's (no clashing names or short forms):
# each gets past option parsing to the plan.
for app in sgd-mf cd-mf lda; do
    bad train -p "$TMP/none" -a $app =: "$TMP/none"
done

# Short forms and --name=value: the same files as the long forms.
"$ROTOR" gen mf --rows=200 --cols=50 --nnz=2k --rank=3 --seed=5 --out="$TMP/long.txt" 2>/dev/null
"$ROTOR" gen mf --rows 200 --cols 50 --nnz 2000 -k 3 -s5 -o "$TMP/short.txt" 2>/dev/null
cmp -s "$TMP/long.txt" "$TMP/short.txt" || fail "short forms and --x=v give different data"
"$ROTOR" partition -i "$TMP/short.txt" -n 1 -t 2 -o "$TMP/plan" 2>/dev/null ||
    fail "partition with short options"
"$ROTOR" train -p "$TMP/plan" -k 4 -r 0.02 -l 0.05 --epochs 2 -o "$TMP/model" 2>"$TMP/train.log" ||
    { cat "$TMP/train.log"; fail "train with short options"; }
[ -f "$TMP/model/W.part-00000.npy" ] || fail "train -o: no model written"
grep -q '"k": 4' "$TMP/model/model.json" || fail "train -k 4: $(cat "$TMP/model/model.json")"
# A repeated option: the last one wins.
"$ROTOR" train -p "$TMP/plan" --rank 9 --rank 4 --epochs 1 --out "$TMP/model2" 2>/dev/null
grep -q '"k": 4' "$TMP/model2/model.json" || fail "repeated --rank: the last should win"
# launch: "--" ends launch's options; the command's own options pass through.
out=$("$ROTOR" launch -n 1 -- "$ROTOR" gen mf --help | head -1)
[ "$out" = "[0] usage: rotor gen mf --rows R --cols C --nnz N [--rank K] [--noise SIGMA] [--powerlaw ALPHA]" ] ||
    fail "launch -- CMD --help: $out"

# Sizes that do not fit in memory are named with their bytes (gen lda --vocab
# 4e9 said only "gen lda: out of memory").  Under a 2 GB address-space limit;
# a sanitizer build cannot start under one, so there the check is skipped.
if plain_build; then
    got=0
    (ulimit -v 2000000 && exec "$ROTOR" gen lda --docs 10 --vocab 4000000000 --topics 2 \
        --doc-len 1 --out "$TMP/huge.txt") 2>"$TMP/huge.err" || got=$?
    [ "$got" = 1 ] || fail "gen lda --vocab 4e9: exit $got, want 1"
    grep -q 'topics x words: out of memory (64000000000 bytes)' "$TMP/huge.err" ||
        fail "gen lda --vocab 4e9: $(cat "$TMP/huge.err")"
else
    note "skipped the out-of-memory check: $ROTOR does not start under ulimit -v"
fi

# The scripts' --help (bench/*.sh, tools/run.sh): exit 0 at once with text on
# stdout, and nothing run (bench/handshake.sh and bench/liveness.sh once took
# --help as their round count and started benchmarks).
if [ -n "${ROTOR_SRC:-}" ]; then
    for s in "$ROTOR_SRC"/bench/*.sh "$ROTOR_SRC"/tools/run.sh; do
        [ "$(basename "$s")" = lib.sh ] && continue
        got=0
        timeout 20 bash "$s" --help >"$TMP/script.out" 2>"$TMP/script.err" </dev/null || got=$?
        [ "$got" = 0 ] || fail "$s --help: exit $got: $(head -3 "$TMP/script.err")"
        [ -s "$TMP/script.out" ] || fail "$s --help printed nothing on stdout"
    done
fi
echo PASS
