#!/usr/bin/env bash
# A run that fails removes an --out it made, never one another process put
# there meanwhile.  Here rank 0 of a 2-rank job waits on a rank 1 that takes
# its connection and never answers (a stopped process; a listener stands in
# for it), and while it waits another job's model appears at its --out (a
# second job with the same --out, or the real job when this process is a
# rank started twice by mistake).  Rank 0 must fail naming rank 1 and leave
# that model in place: it used to remove every --out that did not exist
# when it started, deleting a good model that was not its own.
source "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || skip "python3 not installed (the silent rank 1)"

"$ROTOR" gen mf --rows 400 --cols 240 --nnz 8000 --rank 4 --seed 5 --out "$TMP/r.txt" 2>/dev/null
"$ROTOR" partition --input "$TMP/r.txt" --nodes 2 --threads 1 --out "$TMP/plan" >/dev/null 2>&1
job=(train --plan "$TMP/plan" --app sgd-mf --rank 4 --epochs 2)

note "the other job's model"
"$ROTOR" launch -n 2 -- "$ROTOR" "${job[@]}" --out "$TMP/other" >"$TMP/other.log" 2>&1 ||
    { cat "$TMP/other.log" >&2; fail "the other job failed"; }
sum=$(cat "$TMP"/other/* | cksum)

ports=("$(free_port)" "$(free_port)")
printf '127.0.0.1:%s\n127.0.0.1:%s\n' "${ports[@]}" >"$TMP/hosts"
# rank 1: takes connections and says nothing
python3 -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(16)
held = []
while True: held.append(s.accept()[0])' "${ports[1]}" &
for _ in $(seq 100); do
    ss -ltnH "( sport = :${ports[1]} )" 2>/dev/null | grep -q . && break
    sleep 0.05
done

note "rank 0 fails while another job's model appears at its --out"
rc=0
timeout 60 "$ROTOR" "${job[@]}" --hostfile "$TMP/hosts" --nodes 2 --node 0 --peer-timeout 3 \
    --out "$TMP/out" 2>"$TMP/rank0.err" &
pid=$!
sleep 1
[ ! -e "$TMP/out" ] || fail "--out exists before the other model was moved there"
mv "$TMP/other" "$TMP/out"
wait $pid || rc=$?
{ [ $rc != 0 ] && [ $rc != 124 ]; } || { cat "$TMP/rank0.err" >&2; fail "rank 0 exited $rc"; }
grep -q "rotor: error: .*rank 1 .*has not answered the handshake" "$TMP/rank0.err" ||
    { cat "$TMP/rank0.err" >&2; fail "rank 0 does not name rank 1's silence"; }
[ -d "$TMP/out" ] || fail "the failing rank removed a model it did not write"
[ "$(cat "$TMP"/out/* | cksum)" = "$sum" ] || fail "the other job's model changed"
echo "PASS: foreign_output"
