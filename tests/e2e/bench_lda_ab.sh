#!/usr/bin/env bash
# bench/lda_ab.sh's bookkeeping, with a fake rotor (a script that answers
# --version, gen, partition and train in a blink and can be told to fail),
# so no model is trained: "bit_identical" is true only when every run that
# was meant to save a state saved one and all are equal (a run that saves
# nothing stops the script, rev25 F5); a corpus whose data is absent is
# skipped with a message, but one that fails to be made stops the script
# (F6); a failed plan stops it and a stale plan .part left by an interrupted
# --prepare is replaced (F7).  Each case fails on the scripts before those
# fixes (checked against 06b5b15's bench/).
source "$(dirname "$0")/lib.sh"
: "${ROTOR_SRC:?ROTOR_SRC must point at the source tree}"
command -v python3 >/dev/null || skip "no python3: bench/lda_ab.sh not checked"
[ -x /usr/bin/time ] || skip "no GNU time: bench/lda_ab.sh not checked"
ab=$ROTOR_SRC/bench/lda_ab.sh

# The fake: FAKE_MODE (from its wrapper) is what train saves with --out:
# same / diff (one part file of that content), none (no directory), empty
# (a directory with only model.json).  FAKE_GEN_FAIL, FAKE_PLAN_FAIL: gen /
# partition exit 1.  partition refuses an existing --out, as rotor's does.
cat >"$TMP/fake" <<'SH'
#!/usr/bin/env bash
set -eu
cmd=$1
shift
[ "$cmd" != gen ] || shift # gen lda
declare -A o=()
while [ $# -ge 2 ]; do o[${1#--}]=$2; shift 2; done
case $cmd in
--version) echo "rotor fake-$FAKE_MODE" ;;
gen)
    [ -z "${FAKE_GEN_FAIL:-}" ] || { echo "fake gen: failed" >&2; exit 1; }
    printf '2\n3\n4\n1 1 2\n1 2 1\n2 3 1\n2 1 1\n' >"${o[out]}" ;;
partition)
    [ -z "${FAKE_PLAN_FAIL:-}" ] || { echo "fake partition: failed" >&2; exit 1; }
    [ ! -e "${o[out]}" ] || { echo "${o[out]}: already exists" >&2; exit 1; }
    mkdir "${o[out]}" && echo plan >"${o[out]}/plan" ;;
train)
    [ -f "${o[plan]}/plan" ] || { echo "fake train: no plan ${o[plan]}" >&2; exit 1; }
    printf '{"epochs": [{"iter": %d, "tokens_per_s": 1000000}]}\n' "${o[iters]}" >"${o[metrics]}"
    if [ -n "${o[out]:-}" ] && [ "$FAKE_MODE" != none ]; then
        mkdir -p "${o[out]}" && echo "{\"seconds\": $RANDOM}" >"${o[out]}/model.json"
        [ "$FAKE_MODE" = empty ] || echo "state $FAKE_MODE" >"${o[out]}/part-0"
    fi ;;
*) exit 1 ;;
esac
SH
chmod +x "$TMP/fake"
for m in same diff none empty; do
    printf '#!/bin/sh\nFAKE_MODE=%s exec %s "$@"\n' "$m" "$TMP/fake" >"$TMP/rotor-$m"
    chmod +x "$TMP/rotor-$m"
done
cp "$TMP/rotor-same" "$TMP/rotor-same2"

# A tiny KOS in the UCI format (xz), and a corrupt one.
mkdir -p "$TMP/data/uci-kos" "$TMP/bad/uci-kos" "$TMP/none"
printf '2\n3\n3\n1 1 2\n1 2 1\n2 3 1\n' | xz >"$TMP/data/uci-kos/docword.kos.txt.xz"
echo "not xz" >"$TMP/bad/uci-kos/docword.kos.txt.xz"

# ab NAME B DATA CORPORA [OPTIONS...]: lda_ab.sh with A = rotor-same; its exit
# status in $TMP/NAME.rc, JSON in NAME.json, stderr in NAME.err.
ab() {
    local name=$1 b=$2 data=$3 corpora=$4 rc=0
    shift 4
    ROTOR_DATA_DIR=$TMP/$data "$ab" --a "$TMP/rotor-same" --b "$TMP/rotor-$b" --corpora "$corpora" \
        --topics 10 --iters 2 --rounds 2 "$@" >"$TMP/$name.json" 2>"$TMP/$name.err" || rc=$?
    echo "$rc" >"$TMP/$name.rc"
}
expect() { # NAME RC ERE: exit status RC and stderr matching ERE
    [ "$(cat "$TMP/$1.rc")" = "$2" ] || { cat "$TMP/$1.err" >&2; fail "$1: exit $(cat "$TMP/$1.rc"), not $2"; }
    grep -Eq -- "$3" "$TMP/$1.err" || { cat "$TMP/$1.err" >&2; fail "$1: stderr does not say /$3/"; }
}
bits() { # NAME: bit_identical of each JSON line, space separated
    python3 -c 'import json, sys
print(" ".join(json.dumps(json.loads(l)["bit_identical"]) for l in open(sys.argv[1]) if l.strip()))' "$TMP/$1.json"
}

# The fake itself: equal states are the same bits, different ones are not.
ab same same2 data kos
expect same 0 'kos K=10: .* same bits'
[ "$(bits same)" = true ] || fail "same: bit_identical $(bits same)"
ab diff diff data kos
expect diff 0 'states DIFFER'
[ "$(bits diff)" = false ] || fail "diff: bit_identical $(bits diff)"
ab first same2 data kos --states first
expect first 0 'same bits'
[ "$(bits first)" = true ] || fail "first: bit_identical $(bits first)"

# F5: B saves no state, or a directory without one: not a pass.
ab none none data kos
expect none 2 'b \(.*rotor-none\) saved no state'
ab empty empty data kos
expect empty 2 'b \(.*rotor-empty\) saved no state'

# F6: absent data is skipped with a message; a failure to make a corpus
# stops the script even when another corpus could run.
ab absent same2 none kos,synthetic
expect absent 0 'no KOS, skipped'
[ "$(python3 -c 'import json, sys; print(json.loads(open(sys.argv[1]).readline())["corpus"])' \
    "$TMP/absent.json")" = synthetic ] || fail "absent: $(cat "$TMP/absent.json")"
FAKE_GEN_FAIL=1 ab genfail same2 data kos,synthetic
expect genfail 2 'synthetic: rotor gen lda failed'
ab corrupt same2 bad synthetic,kos
expect corrupt 2 'kos: reading .*docword.kos.txt.xz failed'

# F7: a failed plan stops the script at the plan; a stale .part is replaced.
FAKE_PLAN_FAIL=1 ab planfail same2 data kos
expect planfail 2 'plan for kos failed'
mkdir -p "$TMP/keep/plan-kos-t2.part"
ab stale same2 data kos --keep "$TMP/keep" --prepare
expect stale 0 'corpora and plans for kos'
[ -f "$TMP/keep/plan-kos-t2/plan" ] && [ ! -e "$TMP/keep/plan-kos-t2.part" ] ||
    fail "stale .part: $(ls "$TMP/keep")"
echo PASS
