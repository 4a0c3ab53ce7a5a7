#!/bin/bash
# stale_temporaries.sh - a run killed outright (SIGKILL: no handler runs)
# leaves its temporaries next to its output; the next run that writes the
# same output removes them, and only them: a temporary some live process
# holds (flock), the previous output a two-rename swap keeps as
# NAME.tmp-PID-old while NAME is missing (or its run lives), and a file that
# only looks like a temporary all stay.
source "$(dirname "$0")/lib.sh"
cd "$TMP"
export ROTOR_LOG=warn

note "infer killed by SIGKILL while sampling; the next infer removes its temporary"
"$ROTOR" gen lda --docs 2000 --vocab 500 --topics 5 --doc-len 50 --seed 2 --out d.txt
"$ROTOR" partition --app lda --input d.txt --vocab d.txt.vocab.txt --nodes 1 --threads 1 \
    --out ldaplan
"$ROTOR" train --plan ldaplan --app lda --topics 5 --iters 1 --serial --out ldamodel >/dev/null
"$ROTOR" infer --model ldamodel --input d.txt --vocab d.txt.vocab.txt --iters 1000000 \
    --out inf >/dev/null 2>inf.err &
pid=$!
for _ in $(seq 100); do
    compgen -G 'inf.tmp-*-infer' >/dev/null && break
    sleep 0.1
done
kill -KILL $pid
wait $pid 2>/dev/null || true
left=$(compgen -G 'inf.tmp-*-infer') || fail "infer made no temporary: $(cat inf.err)"
"$ROTOR" infer --model ldamodel --input d.txt --vocab d.txt.vocab.txt --iters 1 --out inf \
    >/dev/null || fail "infer after the killed one"
[ ! -e "$left" ] || fail "$left (of a killed run) is still there"
[ -f inf/infer.json ] || fail "no inf/infer.json"
echo "ok killed infer's temporary removed"

note "partition: only the temporaries no live process holds"
"$ROTOR" gen mf --rows 300 --cols 100 --nnz 3000 --rank 2 --seed 1 --out r.txt
mkdir p.tmp-999999-abc123 && echo x >p.tmp-999999-abc123/shard-00000.bin
echo x >p.tmp.999999                     # an outfile temporary
mkdir p.tmp-888888-live                  # held by a live process (this shell)
exec 9<p.tmp-888888-live
flock -n 9 || fail "cannot lock a directory here"
mkdir p.tmp-777777-old                   # a previous output during a two-rename swap
echo mine >p.tmp.notes                   # not a name rotor gives
echo mine >p.tmp-5-my.notes
"$ROTOR" partition --input r.txt --nodes 1 --threads 2 --out p || fail "partition"
for gone in p.tmp-999999-abc123 p.tmp.999999; do
    [ ! -e "$gone" ] || fail "stale $gone not removed"
done
for kept in p.tmp-888888-live p.tmp-777777-old p.tmp.notes p.tmp-5-my.notes; do
    [ -e "$kept" ] || fail "$kept removed"
done
exec 9<&-
echo "ok only unheld rotor temporaries removed"

note "a swap's NAME.tmp-PID-old of a dead run goes once NAME is in place again"
# (Kept above: p was missing, so it was all that was left of a previous p.)
"$ROTOR" partition --input r.txt --nodes 1 --threads 2 --out p --force || fail "partition --force"
[ ! -e p.tmp-777777-old ] || fail "p.tmp-777777-old (dead run, p in place) not removed"
mkdir p.tmp-$$-old # this shell's: a live run's
"$ROTOR" partition --input r.txt --nodes 1 --threads 2 --out p --force || fail "partition --force"
[ -e p.tmp-$$-old ] || fail "a live run's p.tmp-PID-old removed"
echo "ok swap leftovers"

note "plot: a picture temporary a killed plot left"
if command -v gnuplot >/dev/null; then
    "$ROTOR" train --plan p --app sgd-mf --rank 2 --epochs 2 --serial --metrics m.json \
        >/dev/null 2>&1 || fail "train"
    echo junk >c.png.tmp.999999
    "$ROTOR" plot m.json --out c.png || fail "plot"
    [ ! -e c.png.tmp.999999 ] || fail "plot left a killed plot's temporary"
    echo "ok plot"
fi
echo PASS
