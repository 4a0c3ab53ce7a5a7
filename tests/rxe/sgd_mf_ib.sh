#!/usr/bin/env bash
# End to end over RDMA: a 2-process SGD-MF run over ib in the soft-RoCE VM
# must give W.npy and H.npy bit-identical to the same run over tcp.
# Skips (77) until `rotor gen/partition/train` are built.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
for c in gen partition train launch; do
    "$ROTOR" "$c" --help >/dev/null 2>&1 || { echo "SKIP: 'rotor $c' is not built yet"; exit 77; }
done
W=$(mktemp -d "$ROTOR_BUILD/rxe-sgd.XXXXXX")
trap 'rm -rf "$W"' EXIT
"$ROTOR" gen mf --rows 1200 --cols 400 --nnz 20000 --rank 4 --noise 0.1 --seed 5 \
    --out "$W/r.txt" --test-out "$W/t.txt" --test-fraction 0.1
"$ROTOR" partition --input "$W/r.txt" --test "$W/t.txt" --nodes 2 --threads 1 --seed 5 \
    --out "$W/plan"
in_vm '
set -e
A=$ROTOR_RXE_ADDR
printf "%s:18515\n%s:18516\n" $A $A > /tmp/hosts
train="train --plan '"$W"'/plan --app sgd-mf --rank 8 --lr 0.02 --epochs 3 --seed 9 --hostfile /tmp/hosts"
$ROTOR launch -n 2 -- $ROTOR $train --transport ib --out '"$W"'/ib 2> '"$W"'/ib.log || { cat '"$W"'/ib.log; exit 1; }
$ROTOR launch -n 2 -- $ROTOR $train --transport tcp --out '"$W"'/tcp 2> '"$W"'/tcp.log || { cat '"$W"'/tcp.log; exit 1; }
'
for f in W.npy H.npy; do
    [[ -s $W/ib/$f ]] || fail "the ib run wrote no $f"
    cmp -s "$W/ib/$f" "$W/tcp/$f" || fail "$f over ib differs from tcp"
done
grep -q "ib" "$W/ib.log" || true
echo "PASS: sgd-mf over ib is bit-identical to tcp"
