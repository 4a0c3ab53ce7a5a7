#!/usr/bin/env bash
# Every command's --help ends with examples (rt_command_doc.examples), and
# they work as printed: pasted into a shell, in one directory, command after
# command in `rotor --help`'s order, each on the files the earlier ones
# wrote.  An option renamed or a default changed breaks this test, not the
# first user who copies a line.
source "$(dirname "$0")/lib.sh"
PATH="$(dirname "$ROTOR"):$PATH" # `rotor` in the examples is this build

commands=()
while read -r c; do
    if [ "$c" = gen ]; then commands+=("gen mf" "gen lda"); else commands+=("$c"); fi
done < <(rotor --help | awk '/^commands:/ { on = 1; next } on && NF == 0 { exit } on { print $1 }')
[ "${#commands[@]}" -ge 13 ] || fail "rotor --help lists only: ${commands[*]}"

cd "$TMP"
for c in "${commands[@]}"; do
    read -ra cmd <<<"$c"
    rotor "${cmd[@]}" --help |
        awk '/^examples:$/ { on = 1; next } on && /^  / { print substr($0, 3); next } on { exit }' \
            >"$TMP/examples.sh"
    [ -s "$TMP/examples.sh" ] || fail "rotor $c --help shows no examples"
    grep -q "rotor $c " "$TMP/examples.sh" || fail "no example of rotor $c runs it"
    if [ "$c" = plot ] && ! command -v gnuplot >/dev/null; then
        note "plot: gnuplot not installed (Debian package gnuplot-nox): its example not run"
        continue
    fi
    note "$c: $(head -1 "$TMP/examples.sh")"
    bash -e "$TMP/examples.sh" >"$TMP/run.log" 2>&1 ||
        { cat "$TMP/run.log" >&2; fail "rotor $c --help: an example failed"; }
done

# What the examples say they write.
for f in ratings.txt test.txt corpus.txt corpus.txt.vocab.txt plan/plan.json lda-plan/plan.json \
    model/model.json lda-model/model.json cd-model/model.json metrics.json top5.tsv \
    model-npy/W.npy lda-text/word_topic.txt mixtures/doc_topic.npy rotor-train.1 rotor.bash; do
    [ -s "$f" ] || fail "the examples did not write $f"
done
