#!/bin/bash
# run.sh - the table of bad inputs (cases.tsv), one row per case:
#
#   NAME <TAB> EXIT <TAB> MESSAGE <TAB> BYTES <TAB> COMMAND
#
# BYTES (a printf format; "-" for none, EMPTY for an empty file) is written to the file `in`, then
# COMMAND runs with bash in a fresh directory, where $R is the rotor binary
# and $F holds valid fixtures (r.txt, plan/, model/ (as saved), single/ (exported), doc.txt,
# vocab.txt, ldaplan/, ldamodel/, ck/ (checkpoints of 2 epochs of sgd-mf --rank 2 on plan)).  Each case passes when the command exits with EXIT, its stderr
# is ONE line "rotor: error: ..." containing the extended regex MESSAGE, and
# nothing is left behind: no `out` and no temporary (*.tmp*) in the case
# directory or in $F.  Run by ctest in the release and the sanitizer builds.
set -u
: "${ROTOR:?set ROTOR to the rotor binary}"
HERE=$(cd "$(dirname "$0")" && pwd)
R=$ROTOR
T=$(mktemp -d "${TMPDIR:-/tmp}/rotor-bad-table-XXXXXX")
trap 'rm -rf "$T"' EXIT
export ROTOR_LOG=warn R
F=$T/fix
export F
mkdir -p "$F"
(
    set -e
    cd "$F"
    "$R" gen mf --rows 60 --cols 30 --nnz 700 --rank 2 --seed 4 --out r.txt
    "$R" partition --input r.txt --nodes 2 --threads 1 --test-fraction 0.1 --out plan
    "$R" train --plan plan --app sgd-mf --rank 2 --epochs 1 --serial --out model
    "$R" export --model model --out single
    "$R" train --plan plan --app sgd-mf --rank 2 --epochs 2 --serial --out ckmodel \
        --checkpoint ck --checkpoint-every 1
    "$R" gen lda --docs 30 --vocab 40 --topics 2 --doc-len 12 --seed 3 --out doc.txt
    cp doc.txt.vocab.txt vocab.txt
    "$R" partition --app lda --input doc.txt --vocab vocab.txt --nodes 2 --threads 1 --out ldaplan
    "$R" train --plan ldaplan --app lda --topics 2 --iters 2 --serial --out ldamodel
) >"$T/fixtures.log" 2>&1 || { cat "$T/fixtures.log"; echo "FAIL: fixtures"; exit 1; }

fails=0 n=0
while IFS=$'\t' read -r name want msg bytes cmd; do
    [ -z "$name" ] || [ "${name:0:1}" = "#" ] && continue
    n=$((n + 1))
    d=$T/case/$name
    mkdir -p "$d"
    case $bytes in
    -) ;;
    EMPTY) : >"$d/in" ;;
    *) printf -- "$bytes" >"$d/in" ;;
    esac
    (cd "$d" && bash -c "$cmd") >"$d/stdout" 2>"$d/stderr" </dev/null
    rc=$?
    left=$(cd "$d" && find . "$F" \( -name '*.tmp*' -o -path ./out \) -print 2>/dev/null | head -3)
    lines=$(wc -l <"$d/stderr")
    why=""
    if [ "$rc" != "$want" ]; then
        why="exit $rc, want $want"
    elif [ "$lines" -ne 1 ] || ! grep -q '^rotor: error: ' "$d/stderr"; then
        why="stderr is not one 'rotor: ...' line"
    elif ! grep -Eq -- "$msg" "$d/stderr"; then
        why="message lacks /$msg/"
    elif [ -n "$left" ]; then
        why="left behind: $left"
    fi
    if [ -n "$why" ]; then
        echo "FAIL $name: $why"
        sed 's/^/    | /' "$d/stderr" | head -5
        fails=$((fails + 1))
    else
        echo "ok   $name: $(cat "$d/stderr")"
    fi
done <"$HERE/cases.tsv"
echo "$n cases, $fails failed"
[ "$n" -ge 80 ] || { echo "FAIL: the table needs at least 80 cases"; exit 1; }
[ "$fails" -eq 0 ]
