#!/usr/bin/env bash
# chaos_disk_full.sh - a full disk under a 2-rank job (rotor launch):
#  1. checkpoints on a small tmpfs that holds the first checkpoint but not the
#     second: every rank exits non-zero, one naming its state file and "No space
#     left on device"; the first checkpoint stays complete, nothing else is left
#     in the root, no model is saved, and resuming from it ends bit-identical to
#     an uninterrupted run (the model save on a full disk: model_save_atomic.sh);
#  2. --metrics /dev/full (a device: every write ENOSPC) is refused before
#     any rank trains: exit 2 naming it.
# Part 1 needs root (mount); part 2 runs anywhere.
source "$(dirname "$0")/lib.sh"
export ROTOR_LOG=info

"$ROTOR" gen mf --rows 6000 --cols 1500 --nnz 150000 --rank 8 --noise 0.1 --seed 3 \
    --out "$TMP/r.txt" 2>/dev/null || fail "gen mf"
"$ROTOR" partition --input "$TMP/r.txt" --nodes 2 --threads 1 --seed 3 --out "$TMP/plan" \
    >/dev/null 2>&1 || fail "partition"
job=(train --plan "$TMP/plan" --app sgd-mf --rank 96 --seed 3 --epochs 6)
launch2() { "$ROTOR" launch -n 2 -- "$ROTOR" "$@"; }

note "2. --metrics /dev/full"
st=0
launch2 "${job[@]}" --epochs 2 --metrics /dev/full >"$TMP/full.log" 2>&1 || st=$?
[ "$st" = 2 ] || { cat "$TMP/full.log" >&2; fail "--metrics /dev/full: exit $st, want 2"; }
grep -q 'rotor: error: /dev/full: --metrics: not a regular file' "$TMP/full.log" ||
    { cat "$TMP/full.log" >&2; fail "--metrics /dev/full: no message naming it"; }
note "ok: $(grep -m1 'rotor: error' "$TMP/full.log")"

note "1. checkpoints on a full disk"
[ "$(id -u)" = 0 ] || skip "part 1 needs root (a small tmpfs)"
launch2 "${job[@]}" --out "$TMP/ref" --checkpoint "$TMP/ck-size" --checkpoint-every 2 \
    >"$TMP/ref.log" 2>&1 || { cat "$TMP/ref.log" >&2; fail "the uninterrupted run failed"; }
single "$TMP/ref"
ckpt=$(du -sk "$TMP/ck-size/ckpt-000000000004" | cut -f1)
# One checkpoint and half of the next
size=$((ckpt * 3 / 2))
mkdir "$TMP/small"
mount -t tmpfs -o size=${size}k tmpfs "$TMP/small" 2>/dev/null || skip "cannot mount a tmpfs here"
trap 'umount "$TMP/small" 2>/dev/null || true; cleanup' EXIT
st=0
launch2 "${job[@]}" --out "$TMP/model" --checkpoint "$TMP/small/ck" --checkpoint-every 2 \
    >"$TMP/small.log" 2>&1 || st=$?
[ "$st" != 0 ] || { cat "$TMP/small.log" >&2; fail "checkpoints past the disk's size: exit 0"; }
grep -q 'rotor: error: .*checkpoint at rotation 4: .*state-0000[01]\.bin.*No space left on device' \
    "$TMP/small.log" || { cat "$TMP/small.log" >&2; fail "no rank names its state file and ENOSPC"; }
for r in 0 1; do
    grep -q "^\[$r\] rotor: error" "$TMP/small.log" || fail "rank $r reported no error"
done
note "ok: $(grep -m1 'rotor: error' "$TMP/small.log")"
[ ! -e "$TMP/model" ] || fail "a model was saved although a checkpoint failed"
[ -f "$TMP/small/ck/ckpt-000000000002/manifest.json" ] || fail "the first checkpoint is gone"
left=$(cd "$TMP/small/ck" && find . -mindepth 1 | sort | tr '\n' ' ')
[ "$left" = "./ckpt-000000000002 ./ckpt-000000000002/manifest.json ./ckpt-000000000002/state-00000.bin ./ckpt-000000000002/state-00001.bin " ] ||
    fail "the checkpoint root holds: $left"
launch2 "${job[@]}" --resume "$TMP/small/ck" --out "$TMP/res" >"$TMP/res.log" 2>&1 ||
    { cat "$TMP/res.log" >&2; fail "the resume from the first checkpoint failed"; }
grep -q 'continuing at rotation 2' "$TMP/res.log" || fail "the resume did not start at rotation 2"
single "$TMP/res"
for f in W.npy H.npy row_bias.npy col_bias.npy; do
    cmp -s "$TMP/ref.single/$f" "$TMP/res.single/$f" || fail "$f of the resumed run differs"
done
echo PASS
