#!/usr/bin/env bash
# The RDMA backend on soft-RoCE, in one VM boot:
#  1. transport_test over ib, 2 ranks: every scenario (ordering, credits,
#     wrap-around, 10,000 mixed-size passes checked by content, collectives,
#     a killed peer -> survivors fail within 10 s naming it);
#  2. 3 ranks: ordering, collectives, both kill scenarios and each rank
#     stopping in turn after an all-reduce (abort-order);
#  3. rotor bench-link --transport ib prints both tables, and --json parses.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
TT=$ROTOR_BUILD/tests/verbs/transport_test
[[ -x $TT ]] || fail "$TT not built"
# The VM deadline, 100 s under ctest's; the ranks' own guard (--alarm) is
# raised to match, since a TCG guest under load can take minutes per scenario.
RXE_TIMEOUT=${RXE_TIMEOUT:-1300}
ALARM=$((RXE_TIMEOUT - 60))
in_vm '
set -e
A=$ROTOR_RXE_ADDR
echo "== transport_test, 2 ranks"
'"$TT"' --transport ib --host $A --ranks 2 --alarm '"$ALARM"'
echo "== transport_test, 3 ranks"
'"$TT"' --transport ib --host $A --ranks 3 --alarm '"$ALARM"' --scenario order,collectives,kill,kill-collective,abort-order,abort-order,abort-order
echo "== bench-link over ib"
printf "%s:18515\n%s:18516\n" $A $A > /tmp/hosts
$ROTOR launch -n 2 -- $ROTOR bench-link --transport ib --hostfile /tmp/hosts --max-size 1048576 --iters 30 > /tmp/bench.txt
cat /tmp/bench.txt
grep -q "t_typical\[usec\]" /tmp/bench.txt || { echo "no latency table"; exit 1; }
grep -q "BW average\[MB/sec\]" /tmp/bench.txt || { echo "no bandwidth table"; exit 1; }
grep -q "transport: ib" /tmp/bench.txt || { echo "bench-link did not use ib"; exit 1; }
[ "$(grep -c "^\[0\]  1048576 " /tmp/bench.txt)" = 2 ] || { echo "missing 1 MiB rows"; exit 1; }
$ROTOR launch -n 2 -- $ROTOR bench-link --transport ib --hostfile /tmp/hosts --max-size 65536 --iters 10 --json > /tmp/bench.json
sed "s/^\[0\] //" /tmp/bench.json > /tmp/bench.clean.json
if command -v python3 >/dev/null; then
    python3 -c "import json,sys; d=json.load(sys.stdin); assert d[\"transport\"]==\"ib\" and len(d[\"latency\"])==5 and len(d[\"bandwidth\"])==5, d" < /tmp/bench.clean.json
else
    grep -q "\"transport\": *\"ib\"" /tmp/bench.clean.json || { echo "bench-link --json: no transport ib"; exit 1; }
fi
echo "all rxe transport checks passed"
'
