#!/usr/bin/env bash
# `cmake --install` into a temporary prefix puts rotor, one man page per
# command (generated from the option tables) and the bash completion where
# they belong; `man -l` renders every page without a warning; the completion
# completes option names and enum values; `cpack -G DEB` builds a package
# holding the same files.
source "$(dirname "$0")/lib.sh"
: "${ROTOR_BUILD:?ROTOR_BUILD must be set; run through ctest}"

cmake --install "$ROTOR_BUILD" --prefix "$TMP/p" >"$TMP/install.log" ||
    { cat "$TMP/install.log"; fail "cmake --install"; }
bin=$TMP/p/bin/rotor man1=$TMP/p/share/man/man1
compl=$TMP/p/share/bash-completion/completions/rotor
[ -x "$bin" ] || fail "no $bin"
"$bin" --version >"$TMP/version.txt"
grep -q '^rotor [0-9]*\.[0-9]*\.[0-9]* build [0-9a-f]\{16\}$' "$TMP/version.txt" || fail "--version: $(cat "$TMP/version.txt")"
grep -q '^transports: tcp, ib' "$TMP/version.txt" || fail "--version lacks the transports"
grep -q '^sgd-mf kernels: ' "$TMP/version.txt" || fail "--version lacks the kernel paths"

# One page per command of `rotor --help` (gen: one per generator), and rotor.1.
[ -f "$man1/rotor.1" ] || fail "no rotor.1"
n=0
for cmd in $("$bin" --help | awk '/^commands:/ { f = 1; next } f && /^  [a-z]/ { print $1 }'); do
    if [ "$cmd" = gen ]; then pages="gen-mf gen-lda"; else pages=$cmd; fi
    for p in $pages; do
        [ -f "$man1/rotor-$p.1" ] || fail "no man page rotor-$p.1"
        n=$((n + 1))
    done
done
[ "$n" -ge 9 ] || fail "only $n command pages"
[ "$(ls "$man1" | wc -l)" = $((n + 1)) ] || fail "unexpected files in $man1: $(ls "$man1")"

# Every page renders, and carries every option of the command's --help.
if command -v man >/dev/null; then
    for f in "$man1"/*.1; do
        MANWIDTH=100 man --warnings -l "$f" >"$TMP/page.txt" 2>"$TMP/page.err" ||
            fail "man -l $f failed: $(cat "$TMP/page.err")"
        ! grep -qi warn "$TMP/page.err" || fail "man -l $f: $(cat "$TMP/page.err")"
        grep -q '^NAME' "$TMP/page.txt" || fail "$f: no NAME section"
    done
    MANWIDTH=100 man -l "$man1/rotor-train.1" >"$TMP/train.txt" 2>/dev/null
    for o in $("$bin" train --help | grep -o -- '--[a-z][a-z-]*' | sort -u); do
        grep -q -- "$o" "$TMP/train.txt" || fail "rotor-train.1 lacks $o"
    done
else
    note "man is not installed (package man-db): pages not rendered"
fi

# The completion script: option names, enum choices, subcommands.
bash -n "$compl" || fail "completion script has a syntax error"
complete_words() {
    bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _rotor;
             echo "${COMPREPLY[*]}"' _ "$compl" "$@"
}
[ "$(complete_words rotor trai)" = train ] || fail "completion of a command"
[ "$(complete_words rotor train --sched)" = --schedule ] || fail "completion of an app option"
[ "$(complete_words rotor train --schedule "")" = "fixed bold decay" ] || fail "enum choices"
[ "$(complete_words rotor gen "")" = "mf lda" ] || fail "gen subcommands"
[ "$(complete_words rotor gen mf --pow)" = --powerlaw ] || fail "gen mf options"

# The Debian package holds the same files under /usr.
if command -v cpack >/dev/null && command -v dpkg-deb >/dev/null; then
    (cd "$TMP" && cpack -G DEB --config "$ROTOR_BUILD/CPackConfig.cmake" -B "$TMP/pkg") \
        >"$TMP/cpack.log" 2>&1 || { cat "$TMP/cpack.log"; fail "cpack -G DEB"; }
    deb=$(ls "$TMP"/pkg/*.deb)
    dpkg-deb -c "$deb" >"$TMP/deb.txt"
    for f in ./usr/bin/rotor ./usr/share/man/man1/rotor-train.1 ./usr/share/man/man1/rotor.1 \
        ./usr/share/bash-completion/completions/rotor; do
        grep -q " $f\$" "$TMP/deb.txt" || fail "$deb lacks $f"
    done
    note "$(basename "$deb"): $(dpkg-deb -f "$deb" Depends)"
else
    note "cpack or dpkg-deb missing: no package built"
fi
echo PASS
