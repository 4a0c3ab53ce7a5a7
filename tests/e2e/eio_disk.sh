#!/usr/bin/env bash
# A disk that returns EIO (a FUSE passthrough that fails chosen operations,
# tests/e2e/eiofs.py): every output names the path and the error, exits
# non-zero and never loses what was there before.  Skipped without root,
# /dev/fuse or python3-fusepy.
source "$(dirname "$0")/lib.sh"
export ROTOR_LOG=warn
[ "$(id -u)" = 0 ] && [ -c /dev/fuse ] || skip "needs root and /dev/fuse"
/usr/bin/python3 -c 'import fusepy' 2>/dev/null || skip "needs python3-fusepy"
ROOTDIR=$TMP/root MNT=$TMP/mnt
mkdir -p "$ROOTDIR" "$MNT"
/usr/bin/python3 "$(dirname "$0")/eiofs.py" "$ROOTDIR" "$MNT" >"$TMP/fuse.log" 2>&1 &
trap 'umount -l "$MNT" 2>/dev/null; cleanup' EXIT
for _ in $(seq 100); do mountpoint -q "$MNT" && break; sleep 0.1; done
mountpoint -q "$MNT" || { cat "$TMP/fuse.log" >&2; skip "cannot mount FUSE here"; }
fault() { printf '%s\n' "$*" >"$ROOTDIR/.fault"; }

"$ROTOR" gen mf --rows 60 --cols 30 --nnz 700 --rank 2 --seed 4 --out "$TMP/r.txt" 2>/dev/null
"$ROTOR" partition --input "$TMP/r.txt" --nodes 2 --threads 1 --out "$TMP/plan" >/dev/null
train=(train --plan "$TMP/plan" --app sgd-mf --rank 2 --serial)

# expect_eio WHAT ERE CMD...: CMD exits 1 with one error line matching ERE.
expect_eio() {
    local what=$1 ere=$2
    shift 2
    expect_status 1 "$@"
    grep -Eq "^rotor: error: .*$ere.*Input/output error" "$TMP/last.err" ||
        { cat "$TMP/last.err" >&2; fail "$what: the error does not name $ere and EIO"; }
}

note "partition: a shard, plan.json and the plan directory that fail at fsync"
for f in 'shard-00001\.bin' 'plan\.json' 'p\.tmp-[0-9]+-[A-Za-z0-9]+$'; do
    fault fsync "$f"
    expect_eio "partition ($f)" "p" "$ROTOR" partition --input "$TMP/r.txt" --nodes 2 --threads 1 \
        --out "$MNT/p"
    [ ! -e "$MNT/p" ] || fail "partition ($f): a plan was left"
done

note "train --out: a part that cannot be written leaves the previous model"
fault none
"$ROTOR" "${train[@]}" --epochs 2 --out "$MNT/m"
cp "$MNT/m/model.json" "$TMP/before.json"
fault write 'W\.part'
expect_eio "train --out" "W.part-00000.npy" "$ROTOR" "${train[@]}" --epochs 3 --out "$MNT/m"
cmp -s "$MNT/m/model.json" "$TMP/before.json" || fail "train --out: the previous model changed"

note "train --out: the new model is in place when only its parent's fsync fails"
fault fsync '^/$'
expect_eio "train --out (parent)" "$MNT" "$ROTOR" "${train[@]}" --epochs 3 --out "$MNT/m"
grep -q '"epochs": 3' "$MNT/m/model.json" 2>/dev/null ||
    fail "train --out (parent): neither the new model nor the previous one is left"

note "train --checkpoint: a state file that cannot be written"
fault write 'state-'
expect_eio "checkpoint" "state-00000.bin" "$ROTOR" "${train[@]}" --epochs 2 \
    --checkpoint "$MNT/ck" --checkpoint-every 1
[ -z "$(ls -A "$MNT/ck")" ] || fail "checkpoint: left $(ls -A "$MNT/ck")"
fault none

# A file cut after it was stat'd (the shrink fault: stat says 4 KiB more than
# a read gives): the read names the file, how much came and why, exit 2.
note "partition --verify: a shard cut while being read"
"$ROTOR" partition --input "$TMP/r.txt" --nodes 2 --threads 1 --out "$MNT/pv" >/dev/null
# A stat just before the fault: the mount caches no attributes (eiofs.py's
# attr_timeout=0), so the next stat still sees the shrink.
stat "$MNT/pv/shard-00001.bin" >/dev/null
fault shrink 'pv/shard-00001\.bin$'
expect_status 2 "$ROTOR" partition --verify "$MNT/pv"
grep -Eq "^rotor: error: .*shard-00001\.bin: truncated while being read \([0-9]+ of [0-9]+ bytes" \
    "$TMP/last.err" || { cat "$TMP/last.err" >&2; fail "verify: a shard cut while being read"; }
note "train --resume: a state file cut while being read"
fault none
"$ROTOR" "${train[@]}" --epochs 2 --out "$TMP/m2" --checkpoint "$MNT/ck2" --checkpoint-every 1 \
    >/dev/null 2>&1 || fail "checkpointed run"
stat "$MNT"/ck2/ckpt-*/state-*.bin >/dev/null
fault shrink 'ck2/.*state-[0-9]+\.bin$'
expect_status 2 "$ROTOR" "${train[@]}" --epochs 3 --resume "$MNT/ck2" --out "$TMP/m3"
grep -Eq "^rotor: error: .*state-[0-9]+\.bin: read failed: [0-9]+ of [0-9]+ bytes \(cut short while being read\?\)" \
    "$TMP/last.err" || { cat "$TMP/last.err" >&2; fail "resume: a state file cut while being read"; }
[ ! -e "$TMP/m3" ] || fail "resume: a model was written from a state cut short"
fault none
echo "PASS: eio_disk"
