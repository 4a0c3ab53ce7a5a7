#!/usr/bin/env bash
# Checkpoints and exact resume, for sgd-mf, cd-mf and lda on 2 processes over
# TCP:
#  1. a run stopped normally after 6 epochs / sweeps / outer iterations and
#     resumed (--resume) to 12 ends bit-identical to a straight 12;
#  2. a run checkpointing every 2 epochs (sweeps, outer iterations) whose
#     rank 1 is killed with SIGKILL once a checkpoint exists, restarted with
#     --resume, ends bit-identical to an uninterrupted run;
#  3. a resume with another split, other options or another plan, or from a
#     damaged state file, is refused (exit 2, naming what differs), and so
#     is a --checkpoint directory holding another job's checkpoints (left
#     as they were);
#  4. a finished run resumed with its own length trains nothing more and
#     saves the model the run had (the checkpoint its end wrote); resumed
#     with a shorter length it is refused (exit 2, no model);
#  5. a newer checkpoint cut short while it was written (state files there,
#     one of them truncated, no manifest) is skipped with a note: the resume
#     takes the newest complete one and still ends bit-identical.
source "$(dirname "$0")/lib.sh"

small_plans

# app -> training options (without the run length) and the model files to compare
declare -A OPTS=(
    [sgd-mf]="--plan $TMP/mfplan --app sgd-mf --rank 8 --seed 3 --schedule bold"
    [cd-mf]="--plan $TMP/mfplan --app cd-mf --rank 4 --inner 2 --seed 3"
    [lda]="--plan $TMP/ldaplan --app lda --topics 8 --seed 3 --eval-every 4 --sampler mh"
)
declare -A LENGTH=([sgd-mf]=--epochs [cd-mf]=--outer [lda]=--iters)
declare -A FILES=([sgd-mf]="W.npy H.npy row_bias.npy col_bias.npy" [cd-mf]="W.npy H.npy"
                  [lda]="word_topic.npy doc_topic.npy topics.txt")

same_model() { # same_model APP DIR_A DIR_B WHAT
    single "$2" "$3"
    for f in ${FILES[$1]}; do
        cmp -s "$2.single/$f" "$3.single/$f" || fail "$1: $f of the $4 differs from the uninterrupted run"
    done
}

train2() { # train2 LOG ARGS...: 2 processes under rotor launch
    local log=$1; shift
    "$ROTOR" launch -n 2 -- "$ROTOR" train "$@" >"$log" 2>&1 || { cat "$log" >&2; return 1; }
}

refused2() { # refused2 LOG MESSAGE WHAT ARGS...: 2 processes must fail, naming MESSAGE
    local log=$1 want=$2 what=$3 st=0; shift 3
    "$ROTOR" launch -n 2 -- "$ROTOR" train "$@" >"$log" 2>&1 || st=$?
    [ "$st" != 0 ] && grep -q "$want" "$log" ||
        { cat "$log" >&2; fail "$what was accepted (exit $st)"; }
}

for app in sgd-mf cd-mf lda; do
    # shellcheck disable=SC2086
    read -r -a opts <<<"${OPTS[$app]}"
    len=${LENGTH[$app]}
    note "$app: 6 then resume to 12 == straight 12"
    train2 "$TMP/$app-12.log" "${opts[@]}" "$len" 12 --out "$TMP/$app-12" || fail "$app straight"
    train2 "$TMP/$app-6.log" "${opts[@]}" "$len" 6 --checkpoint "$TMP/$app-ck6" ||
        fail "$app first half"
    grep -q "checkpoint: rotation .* written to .* in [0-9.]*s" "$TMP/$app-6.log" ||
        fail "$app: no checkpoint line in the log"
    train2 "$TMP/$app-r.log" "${opts[@]}" "$len" 12 --resume "$TMP/$app-ck6" \
        --out "$TMP/$app-r" || fail "$app resume"
    grep -q "resume: $app from" "$TMP/$app-r.log" || fail "$app: the resume is not logged"
    same_model "$app" "$TMP/$app-12" "$TMP/$app-r" "resumed run"
    # It really trained on from the checkpoint: the half run's model differs.
    train2 "$TMP/$app-6b.log" "${opts[@]}" "$len" 6 --out "$TMP/$app-6" || fail "$app 6"
    single "$TMP/$app-6"
    ! cmp -s "$TMP/$app-6.single/${FILES[$app]%% *}" "$TMP/$app-12.single/${FILES[$app]%% *}" ||
        fail "$app: 6 and 12 give the same model (nothing trained?)"
    # The finished run resumed with its own length trains nothing more (it
    # ran one more epoch, sweep or outer iteration, and saved that model).
    train2 "$TMP/$app-6r.log" "${opts[@]}" "$len" 6 --resume "$TMP/$app-ck6" \
        --out "$TMP/$app-6r" || fail "$app: resume of a finished run"
    grep -q "resume: the checkpoint is at the end of the run" "$TMP/$app-6r.log" ||
        fail "$app: the finished resume is not logged"
    same_model "$app" "$TMP/$app-6" "$TMP/$app-6r" "finished run resumed with its own length"
    # A shorter run resumed from it: it used to save the 6 run's model as
    # its own (exit 0).
    refused2 "$TMP/$app-5r.log" "ckpt-[0-9]*: the checkpoint is after .* 6, past this run's $len 5" \
        "$app: a resume with a length below the checkpoint's" "${opts[@]}" "$len" 5 \
        --resume "$TMP/$app-ck6" --out "$TMP/$app-5r"
    [ ! -e "$TMP/$app-5r" ] || fail "$app: the refused resume wrote a model"
done

# (warp: its per-token proposals are state; cycle: its document tables are
# refilled from the topics; sparse above K = 512: its documents' counts live
# in their topic lists)
for s in warp cycle sparse600; do
    note "lda --sampler $s: 6 then resume to 12 == straight 12"
    read -r -a opts <<<"${OPTS[lda]/--sampler mh/--sampler ${s/sparse600/sparse --topics 600}}"
    train2 "$TMP/$s-12.log" "${opts[@]}" --iters 12 --out "$TMP/$s-12" || fail "$s straight"
    train2 "$TMP/$s-6.log" "${opts[@]}" --iters 6 --checkpoint "$TMP/$s-ck6" || fail "$s half"
    train2 "$TMP/$s-r.log" "${opts[@]}" --iters 12 --resume "$TMP/$s-ck6" --out "$TMP/$s-r" ||
        fail "$s resume"
    same_model lda "$TMP/$s-12" "$TMP/$s-r" "resumed $s run"
done

note "another split, other options, another plan and a damaged state file are refused"
ck=$(ls -d "$TMP"/sgd-mf-ck6/ckpt-* | tail -1)
read -r -a opts <<<"${OPTS[sgd-mf]}"
expect_status 2 "$ROTOR" train "${opts[@]}" --epochs 12 --resume "$TMP/sgd-mf-ck6" --threads 4
grep -q "job had processes '2', this run has '1'" "$TMP/last.err" ||
    fail "another split: $(cat "$TMP/last.err")"
# Rank 0 of a 2-process job checks before it connects to anyone.
printf '127.0.0.1:%s\n127.0.0.1:%s\n' "$(free_port)" "$(free_port)" >"$TMP/hosts"
as_rank0=(--hostfile "$TMP/hosts" --nodes 2 --node 0 --epochs 12 --resume "$TMP/sgd-mf-ck6")
expect_status 2 "$ROTOR" train "${opts[@]}" "${as_rank0[@]}" --adaptive none
grep -q "job had --adaptive 'adagrad', this run has 'none'" "$TMP/last.err" ||
    fail "other options: $(cat "$TMP/last.err")"
"$ROTOR" partition --input "$TMP/mf.txt" --test "$TMP/mf_test.txt" --nodes 2 --threads 2 \
    --seed 6 --out "$TMP/mfplan6" >/dev/null 2>&1 || fail "partition mf (seed 6)"
expect_status 2 "$ROTOR" train "${opts[@]}" "${as_rank0[@]}" --plan "$TMP/mfplan6"
grep -q "job had plan '[0-9a-f]*', this run has '[0-9a-f]*'" "$TMP/last.err" ||
    fail "another plan: $(cat "$TMP/last.err")"
# Another job's checkpoints in --checkpoint: only a directory's newest two
# are kept, so this run's checkpoints were deleted as they were written (or
# the other job's, when older), and a resume found only the other job's.
before=$(ls -R "$TMP/sgd-mf-ck6")
refused2 "$TMP/other.log" "ckpt-[0-9]*: the checkpoint's job had --adaptive 'adagrad', this run \
has 'none' (--checkpoint holds another job's checkpoints" "another job's checkpoint directory" \
    "${opts[@]}" --epochs 4 --adaptive none --checkpoint "$TMP/sgd-mf-ck6"
[ "$(ls -R "$TMP/sgd-mf-ck6")" = "$before" ] || fail "another job's checkpoints changed"
# A flipped byte in a section tag's zero padding (byte 13: the "head" tag's,
# after its name and NUL) is damage too, though no reader looks at it.
cp -r "$TMP/sgd-mf-ck6" "$TMP/pad-ck6"
pad=$(ls -d "$TMP"/pad-ck6/ckpt-* | tail -1)
printf 'Z' | dd of="$pad/state-00001.bin" bs=1 seek=13 conv=notrunc status=none
refused2 "$TMP/pad.log" "state-00001.bin: bad section tag (at byte 8)" \
    "a state file with a damaged tag padding" "${opts[@]}" --epochs 12 --resume "$TMP/pad-ck6"
printf 'X' | dd of="$ck/state-00001.bin" bs=1 seek=300 conv=notrunc status=none
refused2 "$TMP/bad.log" "state-00001.bin: checksum mismatch" "a damaged state file" \
    "${opts[@]}" --epochs 12 --resume "$TMP/sgd-mf-ck6"

# SIGKILL of rank 1 after a checkpoint exists, then --resume.
declare -A LONG=([sgd-mf]=400 [cd-mf]=80 [lda]=300)
for app in sgd-mf cd-mf lda; do
    read -r -a opts <<<"${OPTS[$app]}"
    len=${LENGTH[$app]}
    n=${LONG[$app]}
    note "$app: $len $n, rank 1 killed after a checkpoint, resumed"
    train2 "$TMP/$app-long.log" "${opts[@]}" "$len" "$n" --out "$TMP/$app-long" ||
        fail "$app long straight"
    printf '127.0.0.1:%s\n127.0.0.1:%s\n' "$(free_port)" "$(free_port)" >"$TMP/hosts"
    run=(train "${opts[@]}" "$len" "$n" --hostfile "$TMP/hosts" --nodes 2
         --checkpoint "$TMP/$app-ck" --checkpoint-every 2 --out "$TMP/$app-killed")
    "$ROTOR" "${run[@]}" --node 0 >"$TMP/$app-k0.log" 2>&1 &
    pid0=$!
    "$ROTOR" "${run[@]}" --node 1 >"$TMP/$app-k1.log" 2>&1 &
    pid1=$!
    for _ in $(seq 600); do
        ls "$TMP/$app-ck"/ckpt-*/manifest.json >/dev/null 2>&1 && break
        kill -0 "$pid1" 2>/dev/null || break
        sleep 0.05
    done
    kill -9 "$pid1" 2>/dev/null || fail "$app: rank 1 ended before it could be killed"
    wait "$pid1" 2>/dev/null || true
    st=0
    wait "$pid0" || st=$?
    [ "$st" != 0 ] || fail "$app: rank 0 finished although rank 1 was killed"
    [ ! -e "$TMP/$app-killed/model.json" ] || fail "$app: the killed run wrote a model"
    ls "$TMP/$app-ck"/ckpt-*/manifest.json >/dev/null 2>&1 || fail "$app: no complete checkpoint"
    train2 "$TMP/$app-res.log" "${opts[@]}" "$len" "$n" --resume "$TMP/$app-ck" \
        --out "$TMP/$app-res" || fail "$app resume after the kill"
    note "$app: $(grep -o 'resume: .*' "$TMP/$app-res.log" | head -1)"
    same_model "$app" "$TMP/$app-long" "$TMP/$app-res" "run resumed after SIGKILL"
done

# What a SIGKILL in the middle of writing ckpt-N leaves: the directory and
# some state files (one cut short), no manifest.
note "sgd-mf: a newer checkpoint cut short is skipped, the newest complete one resumed"
read -r -a opts <<<"${OPTS[sgd-mf]}"
complete=$(dirname "$(ls "$TMP"/sgd-mf-ck/ckpt-*/manifest.json | tail -1)")
# Past every checkpoint there, complete or not: the kill above may itself
# have left the next one cut short.
n=$((10#${complete##*ckpt-}))
last=$(ls -d "$TMP"/sgd-mf-ck/ckpt-* | tail -1)
m=$((10#${last##*ckpt-} + 2))
cut=$(printf '%s/ckpt-%012d' "$TMP/sgd-mf-ck" $m)
mkdir "$cut"
cp "$complete"/state-00000.bin "$cut"/
head -c 100 "$complete"/state-00001.bin >"$cut"/state-00001.bin
train2 "$TMP/cut.log" "${opts[@]}" --epochs "${LONG[sgd-mf]}" --resume "$TMP/sgd-mf-ck" \
    --out "$TMP/sgd-mf-cut" || fail "resume next to a checkpoint cut short"
grep -q "resume: skipping .*ckpt-0*$m: incomplete" "$TMP/cut.log" ||
    fail "the incomplete checkpoint was not noted: $(cat "$TMP/cut.log")"
grep -q "resume: sgd-mf from .*ckpt-0*$n, continuing at rotation $n" "$TMP/cut.log" ||
    fail "the resume did not take the newest complete checkpoint: $(cat "$TMP/cut.log")"
same_model sgd-mf "$TMP/sgd-mf-long" "$TMP/sgd-mf-cut" "run resumed next to a checkpoint cut short"
echo PASS
