#!/usr/bin/env bash
# Without an RDMA device: --transport auto logs a fallback to tcp and works;
# --transport ib exits 2 with a clear message.  Skips on hosts with RDMA.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
if ls /sys/class/infiniband/* >/dev/null 2>&1; then
    echo "SKIP: this host has RDMA devices"; exit 77
fi
out=$("$ROTOR" launch -n 2 -- "$ROTOR" bench-link --transport auto --max-size 8192 --iters 3 2>&1) ||
    fail "auto run failed: $out"
grep -q "auto chose tcp" <<<"$out" || fail "no fallback message: $out"
grep -q "transport: tcp" <<<"$out" || fail "no table: $out"
hf=$(mktemp)
trap 'rm -f "$hf"' EXIT
printf '127.0.0.1:1\n127.0.0.1:2\n' >"$hf"
set +e
msg=$("$ROTOR" bench-link --transport ib --rank 0 --size 2 --hostfile "$hf" --insecure 2>&1)
rc=$?
set -e
[[ $rc == 2 ]] || fail "--transport ib without a device: exit $rc, expected 2: $msg"
grep -q "no RDMA devices found" <<<"$msg" || fail "unclear message: $msg"
echo "ok: auto -> tcp; ib -> exit 2: $msg"
