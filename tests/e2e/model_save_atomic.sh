#!/usr/bin/env bash
# model_save_atomic.sh - a model directory is committed as a set.
#  1. A save that runs out of space (a small tmpfs: ENOSPC; where nothing can
#     be mounted, a file-size limit with SIGXFSZ ignored: EFBIG) fails, and
#     --out is still the previous complete model (rotor eval gives the same
#     result as before) or, for a first save, no model at all; no
#     temporaries are left.
#  2. Node-local --out (each rank in its own mount namespace, its own
#     directory at the same path): every node keeps its own parts, rank 0's
#     node has the manifest; rotor eval on either node alone says the model
#     is incomplete (exit 2), and the parts copied together equal the model
#     a shared directory gets.
source "$(dirname "$0")/lib.sh"

small_plans
small=(train --plan "$TMP/mfplan" --app sgd-mf --rank 4 --epochs 2 --seed 3)
big=(train --plan "$TMP/mfplan" --app sgd-mf --rank 256 --epochs 1 --seed 3)

# full_save_check DIR WRAP...: a good save into DIR, then a save too big for
# DIR's filesystem run under WRAP; DIR must still hold the first model.
full_save_check() {
    local dir=$1; shift
    "$ROTOR" launch -n 2 -- "$ROTOR" "${small[@]}" --out "$dir/model" 2>"$TMP/good.log" ||
        { cat "$TMP/good.log" >&2; fail "the small save failed"; }
    "$ROTOR" eval --model "$dir/model" --input "$TMP/mf_test.txt" >"$TMP/before.txt" 2>/dev/null ||
        fail "eval of the small model"
    local st=0
    "$@" "$ROTOR" launch -n 2 -- "$ROTOR" "${big[@]}" --out "$dir/model" >"$TMP/full.log" 2>&1 ||
        st=$?
    [ "$st" != 0 ] || { cat "$TMP/full.log" >&2; fail "a save larger than the space succeeded"; }
    grep -Eq "No space left|File too large" "$TMP/full.log" ||
        { cat "$TMP/full.log" >&2; fail "the failed save does not say why"; }
    grep -q "model not saved" "$TMP/full.log" || { cat "$TMP/full.log" >&2; fail "no rank says the model was not saved"; }
    note "$(grep -m1 -E 'No space left|File too large' "$TMP/full.log")"
    "$ROTOR" eval --model "$dir/model" --input "$TMP/mf_test.txt" >"$TMP/after.txt" 2>/dev/null ||
        fail "eval after the failed save"
    diff "$TMP/before.txt" "$TMP/after.txt" >&2 || fail "the model changed under a failed save"
    grep -q '"k": 4' "$dir/model/model.json" || fail "model.json is not the small model's"
    [ -z "$(ls -d "$dir"/*.tmp* "$dir"/model/*.tmp* 2>/dev/null)" ] ||
        fail "temporaries left: $(ls -d "$dir"/*.tmp* "$dir"/model/*.tmp* 2>/dev/null)"
    # A first save that fails leaves no model (or one eval calls incomplete).
    st=0
    "$@" "$ROTOR" launch -n 2 -- "$ROTOR" "${big[@]}" --out "$dir/fresh" >/dev/null 2>&1 || st=$?
    [ "$st" != 0 ] || fail "the fresh big save succeeded"
    if [ -e "$dir/fresh" ]; then
        expect_status 2 "$ROTOR" eval --model "$dir/fresh" --input "$TMP/mf_test.txt"
        grep -q "incomplete model" "$TMP/last.err" || fail "eval on $dir/fresh: $(cat "$TMP/last.err")"
    fi
}

note "1a. a full tmpfs (ENOSPC)"
mkdir -p "$TMP/small"
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=400k tmpfs "$TMP/small" 2>/dev/null; then
    trap 'umount "$TMP/small" 2>/dev/null || true; cleanup' EXIT
    full_save_check "$TMP/small"
    umount "$TMP/small"
    trap cleanup EXIT
else
    note "SKIP 1a: cannot mount a tmpfs here (needs root and mount rights)"
fi

note "1b. a file-size limit (EFBIG, SIGXFSZ ignored)"
mkdir -p "$TMP/limited"
limited() { (trap '' XFSZ && ulimit -f 200 && "$@"); }
full_save_check "$TMP/limited" limited

note "2. node-local --out: every node keeps its own parts"
"$ROTOR" launch -n 2 -- "$ROTOR" "${small[@]}" --out "$TMP/shared" 2>/dev/null ||
    fail "shared save"
single "$TMP/shared"
mkdir -p "$TMP/node0" "$TMP/node1" "$TMP/local"
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
    # shellcheck disable=SC2016
    "$ROTOR" launch -n 2 -- unshare -m sh -c \
        'mount --bind "$0/node$ROTOR_RANK" "$0/local" && exec "$@"' "$TMP" \
        "$ROTOR" "${small[@]}" --out "$TMP/local/model" >"$TMP/local.log" 2>&1 ||
        { cat "$TMP/local.log" >&2; fail "node-local save"; }
    [ -f "$TMP/node0/model/model.json" ] || fail "rank 0's node has no manifest"
    [ -f "$TMP/node1/model/W.part-00001.npy" ] || fail "rank 1's node has no parts"
    [ ! -e "$TMP/node0/model/W.part-00001.npy" ] || fail "rank 1's parts reached rank 0's node"
    grep -q '"node_local": true' "$TMP/node0/model/model.json" ||
        fail "the manifest does not say rank 1 kept its parts"
    expect_status 2 "$ROTOR" eval --model "$TMP/node0/model" --input "$TMP/mf_test.txt"
    grep -q "incomplete model: .*part-00001.npy (written by rank 1) is missing" "$TMP/last.err" ||
        fail "eval on rank 0's node: $(cat "$TMP/last.err")"
    expect_status 2 "$ROTOR" eval --model "$TMP/node1/model" --input "$TMP/mf_test.txt"
    grep -q "incomplete model: no model.json" "$TMP/last.err" ||
        fail "eval on rank 1's node: $(cat "$TMP/last.err")"
    cp "$TMP"/node1/model/*.part-00001.npy "$TMP/node0/model/"
    single "$TMP/node0/model"
    for f in W.npy H.npy row_bias.npy col_bias.npy; do
        cmp -s "$TMP/node0/model.single/$f" "$TMP/shared.single/$f" ||
            fail "$f of the collected node-local parts differs from the shared save"
    done
else
    note "SKIP 2: cannot make mount namespaces here (needs root)"
fi
echo PASS
